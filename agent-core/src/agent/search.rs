//! Tool search as a policy of the loop (see [`crate::tool_search`]): the
//! catalog the run offers holds `search_tools` in place of the tools held
//! back, and each step offers what the model has loaded by searching.
//!
//! Invariant: a step declares every tool the history has called (a
//! history holding a call is sent with its tool), whatever search holds
//! back.

use std::sync::Arc;

use loopwright_types::toolset::ToolCatalog;
use loopwright_types::{ContextBudget, Message};

use super::policy::{Policy, StepTools};
use crate::tool_search::{SearchRun, ToolSearch};

/// Tool search for one run.
pub(super) struct SearchPolicy {
    run: SearchRun,
    budget: Option<ContextBudget>,
}

impl SearchPolicy {
    pub fn new(config: ToolSearch, budget: Option<ContextBudget>) -> Self {
        Self {
            run: SearchRun::new(config),
            budget,
        }
    }
}

impl Policy for SearchPolicy {
    fn catalog(&mut self, base: &Arc<ToolCatalog>) -> Option<Arc<ToolCatalog>> {
        Some(self.run.catalog(base, self.budget.as_ref()))
    }

    fn offer(&mut self, _catalog: &Arc<ToolCatalog>, history: &[Message]) -> Option<StepTools> {
        self.run.offer(history).map(|offer| StepTools {
            tools: offer.tools,
            deferred: offer.deferred,
        })
    }
}
