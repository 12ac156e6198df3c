//! Renders `admin-ui/src/api/types.ts` from the types of this crate and checks that the
//! committed file is what it renders. `SEPP_WRITE_TYPES=1 cargo test -p sepp-admin-types`
//! writes the file instead.

use std::path::PathBuf;

use ts_rs::{Config, TS};

use super::*;

/// The command that rewrites the file.
const WRITE_COMMAND: &str = "SEPP_WRITE_TYPES=1 cargo test -p sepp-admin-types";

const HEADER: &str = "\
/**
 * The shapes the admin HTTP API sends and accepts, as the UI uses them.
 * Field names are the wire names (snake_case); nothing here knows a URL.
 *
 * Generated from crates/sepp-admin-types by its `types_ts` test: do not edit by hand;
 * change the Rust types and run `SEPP_WRITE_TYPES=1 cargo test -p sepp-admin-types`.
 */
";

/// The aliases that have no Rust type of their own.
const TAIL: &str = "\
export type QueueField = keyof QueueLimits

export type BulkActionName = 'requeue' | 'delete' | 'dead_letter'

export type ConfigValue = string | number | boolean | Array<string | number | boolean> | null
";

fn decl<T: TS>(cfg: &Config, out: &mut String) {
    if let Some(docs) = T::docs() {
        out.push_str(&docs);
    }
    out.push_str("export ");
    out.push_str(&T::decl(cfg));
    out.push_str("\n\n");
}

/// The whole file.
pub fn render() -> String {
    // Every integer on the wire fits a JavaScript number.
    let cfg = Config::new().with_large_int("number");
    let mut out = String::from(HEADER);
    out.push('\n');
    macro_rules! all {
        ($($name:ty),* $(,)?) => { $(decl::<$name>(&cfg, &mut out);)* };
    }
    all!(
        Role,
        Session,
        LoginResult,
        Totals,
        Rates,
        Depths,
        QueueFrame,
        FrameTotal,
        FrameServer,
        Frame,
        HistorySample,
        History,
        HistoryInfo,
        QueueHistory,
        ServerSummary,
        Overview,
        Hello,
        ServerInfo,
        RetryBackoff,
        QueueLimits,
        KeyOverride,
        QueuePause,
        Queue,
        JobState,
        CustomValue,
        Payload,
        DeadLetterCause,
        Job,
        JobPage,
        JobCount,
        PayloadInput,
        EnqueueRequest,
        Enqueued,
        CancelResult,
        DeadLetteredResult,
        RequeuedResult,
        DeletedResult,
        BulkMatched,
        BulkAffected,
        BulkAnswer,
        QueueDeleted,
        AuditEntry,
        AuditPage,
        AuditQuery,
        ConfigView,
        ConfigChange,
        WriteResult,
        Rejection,
        ErrorBody,
        WorkerInfo,
        WorkerList,
        Cron,
        PayloadSize,
        Overlap,
        CatchUp,
        ScheduleInfo,
        ScheduleList,
        ScheduleDeleted,
        CronInput,
        ScheduleBody,
        PauseResult,
        ResumeResult,
        AllQueuesPause,
        NamedPause,
        PauseList,
        ClusterMember,
        ClusterNode,
        ClusterDisabled,
        LoginRequest,
        OverviewQuery,
        QueueListQuery,
        QueuePutRequest,
        QueueDeleteQuery,
        CancelRequest,
        DeadLetterRequest,
        KeysRequest,
        BulkRequest,
        PauseRequest,
        ConfigPutRequest,
        KeyAddRequest,
        ClusterInfo,
    );
    out.push_str(TAIL);
    out
}

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../admin-ui/src/api/types.ts")
}

#[test]
fn types_ts_is_current() {
    let rendered = render();
    if std::env::var_os("SEPP_WRITE_TYPES").is_some() {
        std::fs::write(path(), &rendered).expect("write admin-ui/src/api/types.ts");
        return;
    }
    let committed = std::fs::read_to_string(path()).unwrap_or_default();
    assert!(committed == rendered, "admin-ui/src/api/types.ts is stale: run {WRITE_COMMAND}");
}
