//! The limits of a whole run tree (a run and every sub-agent run it starts,
//! theirs included): a budget of model calls and tokens, shared by the
//! tree; and a run's deadline.
//!
//! Invariants: the budget is taken before each model call, one call at a
//! time from one counter shared by the tree, so a fan-out of sub-agents
//! can never make more calls than the budget, however many run at once; a
//! call refused ends its run with [`ExitReason::BudgetExhausted`] and the
//! reason in [`AgentResult::stopped_by`] (its parent's next call is refused
//! as well, so the tree stops); tokens count after each call (input plus
//! output), so the token budget may be passed by at most the calls that
//! were in flight when it ran out. A deadline cancels its run (exit
//! `cancelled`) and says so in [`AgentResult::stopped_by`].
//!
//! [`ExitReason::BudgetExhausted`]: super::ExitReason::BudgetExhausted
//! [`AgentResult::stopped_by`]: super::AgentResult::stopped_by

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::options::AgentOptions;
use loopwright_types::Usage;

/// The model-call and token budget of a run tree.
#[derive(Debug)]
pub(crate) struct TreeBudget {
    max_calls: Option<u64>,
    max_tokens: Option<u64>,
    calls: AtomicU64,
    tokens: AtomicU64,
}

impl TreeBudget {
    /// The budget `options` ask for, if any.
    pub fn from_options(options: &AgentOptions) -> Option<Arc<Self>> {
        (options.max_model_calls.is_some() || options.max_tree_tokens.is_some()).then(|| {
            Arc::new(Self {
                max_calls: options.max_model_calls,
                max_tokens: options.max_tree_tokens,
                calls: AtomicU64::new(0),
                tokens: AtomicU64::new(0),
            })
        })
    }

    /// Take one model call, or say why the tree may make no more.
    pub fn take_call(&self) -> Result<(), String> {
        if let Some(max) = self.max_tokens {
            let used = self.tokens.load(Ordering::SeqCst);
            if used >= max {
                return Err(format!(
                    "the run tree's token budget is used up ({used} of {max} tokens, all its agents together)"
                ));
            }
        }
        if let Some(max) = self.max_calls {
            let taken = self.calls.fetch_add(1, Ordering::SeqCst);
            if taken >= max {
                self.calls.fetch_sub(1, Ordering::SeqCst);
                return Err(format!(
                    "the run tree's budget of {max} model calls is used up (all its agents together)"
                ));
            }
        }
        Ok(())
    }

    /// Count a call's tokens.
    pub fn add(&self, usage: &Usage) {
        let tokens = usage.input_tokens.unwrap_or(0) + usage.output_tokens.unwrap_or(0);
        self.tokens.fetch_add(tokens, Ordering::SeqCst);
    }
}

/// Why a run's own limit stopped it, set at most once.
pub(crate) type StoppedBy = Arc<OnceLock<String>>;

/// Cancel `cancel` when `timeout` has passed, saying so in `stopped_by`;
/// the timer ends with the run.
pub(crate) fn deadline(timeout: Duration, cancel: CancellationToken, stopped_by: StoppedBy) {
    tokio::spawn(async move {
        tokio::select! {
            () = tokio::time::sleep(timeout) => {
                let _ = stopped_by.set(format!("the run's deadline of {timeout:?} passed"));
                cancel.cancel();
            }
            () = cancel.cancelled() => {}
        }
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn calls_stop_at_the_budget_and_tokens_after_it() {
        let mut options = AgentOptions {
            max_model_calls: Some(2),
            max_tree_tokens: Some(100),
            ..Default::default()
        };
        let budget = TreeBudget::from_options(&options).unwrap();
        assert!(budget.take_call().is_ok());
        assert!(budget.take_call().is_ok());
        let refused = budget.take_call().unwrap_err();
        assert!(refused.contains("budget of 2 model calls"), "{refused}");
        options.max_model_calls = None;
        let tokens = TreeBudget::from_options(&options).unwrap();
        tokens.add(&Usage::new(60, 40));
        assert!(tokens.take_call().unwrap_err().contains("100 of 100 tokens"));
        assert!(TreeBudget::from_options(&AgentOptions::default()).is_none());
    }
}
