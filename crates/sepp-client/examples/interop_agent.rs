//! The Rust side of the cross-language interop test (`tests/interop/`): a command that either
//! enqueues jobs described in a JSON file, or runs the Worker until it has handled a given number
//! of jobs and prints what each handler saw.
//!
//! ```text
//! interop_agent produce --addr HOST:PORT --queue Q --spec FILE.json   -> {"job_ids":[...]}
//! interop_agent work    --addr HOST:PORT --queue Q --count N          -> {"jobs":[...]}
//! ```
//!
//! A spec is `{"jobs":[{"job_type","payload_b64","encoding","custom":{..},"traceparent"}]}`.
//! Custom values keep their JSON types: integers are sent as ints, other numbers as doubles.
//! The only line on stdout is the JSON answer; errors go to stderr with a non-zero exit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use sepp_client::client::SeppClient;
use sepp_client::worker::Worker;
use sepp_client::{EnqueueRequest, JobCtx, Payload, Primitive, TraceContext};
use serde_json::{Map, Value, json};

type AnyError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() {
    if let Err(error) = run(std::env::args().skip(1).collect()).await {
        eprintln!("interop_agent: {error}");
        std::process::exit(1);
    }
}

async fn run(args: Vec<String>) -> Result<(), AnyError> {
    let (mode, flags) = args.split_first().ok_or("usage: interop_agent produce|work --addr A --queue Q ...")?;
    let flags = parse_flags(flags)?;
    let flag = |name: &str| flags.get(name).cloned().ok_or_else(|| format!("missing --{name}"));
    let client = SeppClient::connect(flag("addr")?).await?;
    let queue = flag("queue")?;
    let answer = match mode.as_str() {
        "produce" => produce(&client, &queue, &std::fs::read_to_string(flag("spec")?)?).await?,
        "work" => work(client, &queue, flag("count")?.parse()?).await?,
        other => return Err(format!("unknown mode {other:?}").into()),
    };
    println!("{answer}");
    Ok(())
}

fn parse_flags(args: &[String]) -> Result<HashMap<String, String>, AnyError> {
    let mut flags = HashMap::new();
    let mut args = args.iter();
    while let Some(name) = args.next() {
        let name = name.strip_prefix("--").ok_or_else(|| format!("unexpected argument {name:?}"))?;
        let value = args.next().ok_or_else(|| format!("--{name} needs a value"))?;
        flags.insert(name.to_owned(), value.clone());
    }
    Ok(flags)
}

async fn produce(client: &SeppClient, queue: &str, spec: &str) -> Result<Value, AnyError> {
    let spec: Value = serde_json::from_str(spec)?;
    let jobs = spec["jobs"].as_array().ok_or("the spec has no \"jobs\" array")?;
    let mut job_ids = Vec::new();
    for job in jobs {
        let text = |field: &str| job[field].as_str().ok_or_else(|| format!("job field {field:?} is not a string"));
        let mut request = EnqueueRequest::new(queue, text("job_type")?)?
            .with_payload(Payload::new(BASE64.decode(text("payload_b64")?)?, text("encoding")?))
            .with_trace_context(TraceContext::new(text("traceparent")?)?);
        for (key, value) in job["custom"].as_object().ok_or("job field \"custom\" is not an object")? {
            request = request.with_custom_entry(key, primitive(value)?);
        }
        job_ids.push(client.enqueue(request).await?.job_id);
    }
    Ok(json!({ "job_ids": job_ids }))
}

fn primitive(value: &Value) -> Result<Primitive, AnyError> {
    Ok(match value {
        Value::String(text) => Primitive::String(text.clone()),
        Value::Bool(flag) => Primitive::Bool(*flag),
        Value::Number(number) => match number.as_i64() {
            Some(int) => Primitive::Int(int),
            None => Primitive::Double(number.as_f64().ok_or("a number out of range")?),
        },
        other => return Err(format!("custom value {other} is not a string, number or bool").into()),
    })
}

async fn work(client: SeppClient, queue: &str, count: usize) -> Result<Value, AnyError> {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let worker = Worker::new(client, [queue], Duration::from_secs(30))?;
    let shutdown = worker.shutdown_handle();
    let worker = worker.with_catch_all_handler({
        let seen = seen.clone();
        move |payload: Option<Payload>, ctx: Arc<JobCtx>| {
            let (seen, shutdown) = (seen.clone(), shutdown.clone());
            async move {
                let mut seen = seen.lock().expect("the list of seen jobs is never poisoned");
                seen.push(describe(payload, &ctx));
                if seen.len() >= count {
                    shutdown.shutdown();
                }
                Ok(())
            }
        }
    });
    if count > 0 {
        worker.run().await;
    }
    let jobs = std::mem::take(&mut *seen.lock().expect("the list of seen jobs is never poisoned"));
    Ok(json!({ "jobs": jobs }))
}

fn describe(payload: Option<Payload>, ctx: &JobCtx) -> Value {
    let custom: Map<String, Value> = ctx
        .custom
        .iter()
        .map(|(key, value)| {
            let value = match value {
                Primitive::String(text) => json!(text),
                Primitive::Int(int) => json!(int),
                // serde_json writes a whole double as `2.0`, so readers still see a float.
                Primitive::Double(double) => json!(double),
                Primitive::Bool(flag) => json!(flag),
            };
            (key.clone(), value)
        })
        .collect();
    json!({
        "id": ctx.id,
        "job_type": ctx.job_type,
        "payload_b64": payload.as_ref().map(|payload| BASE64.encode(&payload.data)),
        "encoding": payload.as_ref().map(|payload| payload.encoding.clone()),
        "custom": custom,
        "traceparent": ctx.trace_context.as_ref().map(TraceContext::traceparent),
    })
}
