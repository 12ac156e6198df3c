//! Cluster mode's glue between Raft and the committer: the committer serves only while this
//! node leads, and each time it starts to lead it starts from the committed state.
//!
//! [`follow_leadership`] watches Raft's metrics and the committer's own word on whether it
//! serves. When this node leads and the committer does not serve (a new term, or the committer
//! stepped down after a failed proposal), it waits until everything committed before is applied
//! (a linearizable read through Raft), copies the state machine's state and hands it to the
//! committer with a [`ReplicatedLog`]. When another node leads, it tells the committer to follow.
//! Time-driven transitions (lease expiry, promotions, schedules) are thereby the leader's alone:
//! only a serving committer sweeps, and its records reach the others as entries.

use sepp_cluster::{Raft, ReplicatedLog, StateMachine};
use tokio::runtime::Handle;

use crate::committer::{Command, CommitterHandle};

/// Drives `committer` by this node's leadership until Raft or the committer stops.
pub async fn follow_leadership(raft: Raft, machine: StateMachine, committer: CommitterHandle) {
    let id = raft.metrics().borrow().id;
    let mut metrics = raft.metrics();
    let mut serving = committer.leading();
    loop {
        let leads = {
            let metrics = metrics.borrow_and_update();
            metrics.state == openraft::ServerState::Leader && metrics.current_leader == Some(id)
        };
        let serves = *serving.borrow_and_update();
        if leads && !serves && raft.ensure_linearizable().await.is_ok() {
            let state = Box::new(machine.committed_state());
            let log = Box::new(ReplicatedLog::new(raft.clone(), Handle::current()));
            if committer.send(Command::Lead { state, log }).await.is_err() {
                return;
            }
            if serving.wait_for(|serves| *serves).await.is_err() {
                return;
            }
            continue;
        }
        if !leads && serves {
            if committer.send(Command::Follow).await.is_err() {
                return;
            }
            if serving.wait_for(|serves| !*serves).await.is_err() {
                return;
            }
            continue;
        }
        tokio::select! {
            changed = metrics.changed() => if changed.is_err() { return },
            changed = serving.changed() => if changed.is_err() { return },
        }
    }
}
