#!/usr/bin/env python3
"""Draws the queries of docs/grafana/sepp.json on real data, as a PNG.

Reads every panel's queries from the dashboard, runs them against a Prometheus server's HTTP
API (query_range over the last --minutes), and draws one chart per panel in a grid. Used by
scripts/dashboard-demo.sh, which starts a server, a Prometheus and a workload first.

    scripts/render-dashboard.py --prometheus http://127.0.0.1:9090 --minutes 3 --out docs/grafana/sepp-dashboard.png
"""

import argparse
import json
import math
import time
import urllib.parse
import urllib.request
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def query_range(base, expr, start, end, step):
    params = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(f"{base}/api/v1/query_range?{params}") as response:
        body = json.load(response)
    if body.get("status") != "success":
        raise SystemExit(f"query failed: {expr}: {body}")
    return body["data"]["result"]


def legend(template, labels):
    text = template
    for key, value in labels.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prometheus", required=True)
    parser.add_argument("--dashboard", default=str(Path(__file__).parent.parent / "docs/grafana/sepp.json"))
    parser.add_argument("--minutes", type=float, default=3)
    parser.add_argument("--rate-interval", default="15s")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    dashboard = json.loads(Path(args.dashboard).read_text())
    panels = dashboard["panels"]
    end = time.time()
    start = end - args.minutes * 60
    step = 2
    columns = 2
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(16, 4.2 * rows))
    for axis, panel in zip(axes.flat, panels):
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
        drawn = 0
        for target in panel["targets"]:
            expr = target["expr"].replace("$__rate_interval", args.rate_interval).replace('"$queue"', '".*"')
            for series in query_range(args.prometheus, expr, start, end, step):
                points = [(float(t) - start, float(v)) for t, v in series["values"] if v not in ("NaN", "+Inf", "-Inf")]
                if not points:
                    continue
                xs, ys = zip(*points)
                axis.plot(xs, ys, label=legend(target.get("legendFormat", ""), series["metric"]), linewidth=1.2)
                drawn += 1
        axis.set_title(panel["title"])
        axis.set_xlabel("seconds")
        axis.set_ylabel({"ops": "per second", "reqps": "per second", "ms": "ms"}.get(unit, ""))
        axis.grid(alpha=0.3)
        if drawn:
            axis.legend(fontsize=7, ncol=2, loc="upper left")
        else:
            axis.text(0.5, 0.5, "no data", ha="center", va="center", transform=axis.transAxes)
    for axis in list(axes.flat)[len(panels):]:
        axis.axis("off")
    figure.suptitle("sepp dashboard queries on a live workload (Prometheus, 1 s scrapes)")
    figure.tight_layout()
    figure.savefig(args.out, dpi=80)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
