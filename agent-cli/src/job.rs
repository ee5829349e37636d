//! What one command runs: a prompt (in a stored session or not) or a
//! paused run to resume, and what it leaves in the store when it ends.

use std::sync::Arc;

use loopwright::store::{RunRecord, RunStatus, Store};
use loopwright::{Agent, AgentResult, AgentRun, ApprovalDecision, ExitReason, Message};

use crate::args::{AgentArgs, ApproveMode};
use crate::exit::Failure;
use crate::persist::{self, Origin, Paused, SessionAt};

/// A paused run to continue, with the decisions for its questions.
pub struct ResumeJob {
    pub paused: Paused,
    pub decisions: Vec<(String, ApprovalDecision)>,
    pub store: Arc<dyn Store>,
}

/// What to run, and the store it may need.
pub struct Job {
    pub what: What,
    /// The store `--session` and `--approve defer` use.
    pub store_url: Option<String>,
}

/// What a job runs.
pub enum What {
    /// A prompt.
    Prompt(Message),
    /// A paused run.
    Resume(Box<ResumeJob>),
}

/// A job started: its run and what to write when it ends.
pub struct Started {
    pub run: AgentRun,
    pub after: After,
}

/// What to write in the store once the run ended.
pub struct After {
    store: Option<Arc<dyn Store>>,
    /// The session, its version when the turn began, and the turn's prompt.
    session: Option<(String, u64, Message)>,
    /// The record of a resumed run (claimed, version).
    resumed: Option<RunRecord>,
    /// The stored run's id, for a run that pauses.
    run_id: Option<String>,
    agent: String,
    /// Where the run's agent comes from (a resumed run's, as stored).
    origin: Origin,
}

impl Job {
    /// Start the job's run on `agent`.
    pub async fn start(self, args: &AgentArgs, agent: &Agent) -> Result<Started, Failure> {
        let store_url = self.store_url.as_deref();
        match self.what {
            What::Prompt(message) => {
                let needs_store = args.session.is_some() || args.approve == ApproveMode::Defer;
                let store = match (needs_store, store_url) {
                    (true, Some(url)) => Some(persist::open(url).await?),
                    _ => None,
                };
                let (run, session) = match (&store, &args.session) {
                    (Some(store), Some(id)) => {
                        let at = SessionAt::load(store.as_ref(), id).await?;
                        let mut messages = at.messages;
                        messages.push(message.clone());
                        (agent.run(messages), Some((at.id, at.version, message)))
                    }
                    _ => (agent.run(vec![message]), None),
                };
                Ok(Started {
                    run,
                    after: After {
                        store,
                        session,
                        resumed: None,
                        run_id: None,
                        agent: agent.name().to_owned(),
                        origin: Origin::here(),
                    },
                })
            }
            What::Resume(job) => job.start(agent).await,
        }
    }
}

impl ResumeJob {
    /// Claim the stored run (awaiting approval -> running), then resume it;
    /// a resume refused gives the claim back.
    async fn start(self, agent: &Agent) -> Result<Started, Failure> {
        let ResumeJob {
            paused,
            decisions,
            store,
        } = *Box::new(self);
        let record = store
            .load_run(&paused.run_id)
            .await
            .map_err(|e| Failure::usage(format!("run {}: {e}", paused.run_id)))?
            .ok_or_else(|| Failure::usage(format!("run {} is not in the store", paused.run_id)))?;
        let mut claimed = record.clone().with_status(RunStatus::Running);
        claimed.owner = Some(format!("pid {}", std::process::id()));
        let version = match store.update_run(&claimed, paused.version).await {
            Ok(version) => version,
            Err(e) if e.is_conflict() => {
                return Err(Failure::usage(format!(
                    "run {} was resumed by another process meanwhile (nothing ran here)",
                    paused.run_id
                )));
            }
            Err(e) => return Err(Failure::usage(format!("run {}: {e}", paused.run_id))),
        };
        claimed.version = version;
        let mut resume = agent.resume(paused.state.clone());
        for (call_id, decision) in decisions {
            resume = resume.decide(call_id, decision);
        }
        let run = match resume.run().await {
            Ok(run) => run,
            Err(e) => {
                // Nothing ran: the run waits again.
                let mut message = format!("run {}: {e}", paused.run_id);
                if let Err(stored) = store.update_run(&record, version).await {
                    message.push_str(&format!(
                        "; it could not be put back to awaiting approval ({stored}), so it cannot be resumed again"
                    ));
                }
                return Err(Failure::usage(message));
            }
        };
        let session = paused.session.as_ref().map(|id| {
            let prompt = paused
                .state
                .messages
                .get(paused.state.input_len.saturating_sub(1))
                .cloned()
                .unwrap_or_else(|| Message::user(""));
            (id.clone(), paused.session_version, prompt)
        });
        Ok(Started {
            run,
            after: After {
                store: Some(store),
                session,
                resumed: Some(claimed),
                run_id: Some(paused.run_id),
                agent: agent.name().to_owned(),
                origin: paused.origin,
            },
        })
    }
}

impl After {
    /// Write what the run left: its turn in the session, its paused state,
    /// its record's end. A store that refuses is reported on stderr; the
    /// answer was printed and the status stands.
    pub async fn finish(self, result: &AgentResult) {
        let Some(store) = self.store else { return };
        if let Some(state) = &result.state() {
            let run_id = self
                .run_id
                .unwrap_or_else(|| format!("run_{}", state.id.trim_start_matches("rs_")));
            let session = self
                .session
                .as_ref()
                .map(|(id, version, _)| (id.as_str(), *version));
            let record = persist::record(&run_id, &self.agent, session, state, &self.origin);
            let written = match &self.resumed {
                Some(claimed) => store.update_run(&record, claimed.version).await.map(|_| ()),
                None => store.create_run(&record).await,
            };
            match written {
                Ok(()) => eprintln!(
                    "loopwright: {}",
                    persist::pause_notice(&run_id, state, &self.origin)
                ),
                Err(e) => {
                    eprintln!("loopwright: the paused run could not be stored, so it cannot be resumed: {e}")
                }
            }
            return;
        }
        if let Some(claimed) = self.resumed
            && let Err(e) = store
                .update_run(&persist::finished(claimed.clone(), result), claimed.version)
                .await
        {
            eprintln!("loopwright: run {}: its end was not stored: {e}", claimed.id);
        }
        if result.exit() == ExitReason::AwaitingApproval {
            return;
        }
        if let Some((id, version, prompt)) = &self.session
            && let Err(why) = persist::append_turn(store.as_ref(), id, *version, prompt, result).await
        {
            eprintln!("loopwright: {why}");
        }
    }
}
