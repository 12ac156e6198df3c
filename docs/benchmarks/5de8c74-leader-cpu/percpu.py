# Samples the CPU of every running `sepp` server process (by pid) until stopped; prints, per
# pid, its last cumulative CPU seconds and whether it ran as a cluster node.
import os, time, sys, json
seen = {}
tick = os.sysconf('SC_CLK_TCK')
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for pid in os.listdir('/proc'):
        if not pid.isdigit(): continue
        try:
            cmd = open(f'/proc/{pid}/cmdline','rb').read().split(b'\0')
            if not cmd or not cmd[0].endswith(b'/sepp'): continue
            st = open(f'/proc/{pid}/stat').read().rsplit(')',1)[1].split()
            cpu = (int(st[11]) + int(st[12])) / tick
            conf = cmd[cmd.index(b'--config')+1].decode() if b'--config' in cmd else ''
            cluster = 'node_id' in open(conf).read() if conf and os.path.exists(conf) else False
            seen[pid] = (cpu, cluster)
        except Exception:
            pass
    time.sleep(0.2)
json.dump(seen, open(sys.argv[2],'w'))
