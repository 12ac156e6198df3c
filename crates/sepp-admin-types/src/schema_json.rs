//! Renders `admin-ui/src/api/schema.json`, the JSON Schema (draft 2020-12) of every answer the
//! admin API sends, from the types of this crate, and checks that the committed file is what it
//! renders. `SEPP_WRITE_TYPES=1 cargo test -p sepp-admin-types` writes the file instead.
//!
//! The schemas follow the serde attributes as the server serializes: a field with
//! `skip_serializing_if` is not required, an `Option` is its type or null, a `BTreeMap` is an
//! object whose every value has the map's value type, an untagged enum is `anyOf` its variants,
//! a unit-variant enum is a string `enum`. Titles and descriptions are left out: the doc
//! comments are in `types.ts`. The UI checks each answer against one of the `$defs` (see
//! `admin-ui/src/api/validate.ts`).

use std::path::PathBuf;

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::*;

/// The command that rewrites the file.
const WRITE_COMMAND: &str = "SEPP_WRITE_TYPES=1 cargo test -p sepp-admin-types";

const COMMENT: &str = "The answers of the sepp admin HTTP API. Generated from crates/sepp-admin-types by its \
                       `schema_json` test: do not edit by hand; change the Rust types and run \
                       `SEPP_WRITE_TYPES=1 cargo test -p sepp-admin-types`.";

fn add<T: JsonSchema>(generator: &mut SchemaGenerator) {
    let reference = generator.subschema_for::<T>();
    assert!(reference.get("$ref").is_some(), "{} is not a named schema", T::schema_name());
}

/// The whole file.
pub fn render() -> String {
    let strip_docs = RecursiveTransform(|schema: &mut Schema| {
        schema.remove("title");
        schema.remove("description");
    });
    let mut generator = SchemaSettings::draft2020_12().for_serialize().with_transform(strip_docs).into_generator();
    // Every answer (and every event of `GET /events`); the types they hold come along.
    macro_rules! answers {
        ($($name:ty),* $(,)?) => { $(add::<$name>(&mut generator);)* };
    }
    answers!(
        Session,
        LoginResult,
        Overview,
        Hello,
        Frame,
        QueueHistory,
        ServerInfo,
        ClusterInfo,
        Queue,
        WriteResult,
        QueueDeleted,
        CancelResult,
        PauseResult,
        ResumeResult,
        PauseList,
        Job,
        JobPage,
        JobCount,
        Enqueued,
        DeadLetteredResult,
        RequeuedResult,
        DeletedResult,
        BulkAnswer,
        AuditEntry,
        AuditPage,
        ConfigView,
        WorkerList,
        ScheduleInfo,
        ScheduleList,
        ScheduleDeleted,
        ErrorBody,
    );
    let defs = generator.take_definitions(true);
    let file = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": COMMENT,
        "$defs": defs,
    });
    let mut out = serde_json::to_string_pretty(&file).expect("a schema serializes");
    out.push('\n');
    out
}

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../admin-ui/src/api/schema.json")
}

#[test]
fn schema_json_is_current() {
    let rendered = render();
    if std::env::var_os("SEPP_WRITE_TYPES").is_some() {
        std::fs::write(path(), &rendered).expect("write admin-ui/src/api/schema.json");
        return;
    }
    let committed = std::fs::read_to_string(path()).unwrap_or_default();
    assert!(committed == rendered, "admin-ui/src/api/schema.json is stale: run {WRITE_COMMAND}");
}
