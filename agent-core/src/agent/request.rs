//! One step's request: the settings a hook may change, the tools offered
//! (the catalog's, or tool search's offer) and what the provider is asked
//! to do on its side (native compaction, unsupported media).
//!
//! Invariant: tools stay declared on the concluding step (a history holding
//! tool calls must be sent with tools), offered to none
//! (`ToolChoice::None`).

use std::collections::HashSet;
use std::sync::Arc;

use super::drive::Run;
use super::guard::Guard;
use super::hooks::StepSettings;
use super::options::CONCLUDE_INSTRUCTION;
use crate::tool_search::SearchRun;
use loopwright_types::Message;
use loopwright_types::tool::ToolDefinition;
use loopwright_types::toolset::ToolCatalog;
use loopwright_types::{ModelRequest, ToolChoice};

/// One step's request and what the loop needs to run its calls.
pub(super) struct Planned {
    pub request: ModelRequest,
    /// Exposed names offered this step, when a hook narrowed them.
    pub offered: Option<HashSet<String>>,
}

/// The tools of one step: those declared, those tool search holds back.
pub(super) struct StepTools {
    pub tools: Arc<Vec<ToolDefinition>>,
    pub deferred: Arc<Vec<ToolDefinition>>,
}

/// This step's tools: tool search's offer when search is on for the
/// catalog, else the whole catalog.
pub(super) fn step_tools(
    search: Option<&mut SearchRun>,
    catalog: &Arc<ToolCatalog>,
    history: &[Message],
) -> StepTools {
    match search.and_then(|s| s.offer(history)) {
        Some(offer) => StepTools {
            tools: offer.tools,
            deferred: offer.deferred,
        },
        None => StepTools {
            tools: catalog.definitions().clone(),
            deferred: Arc::default(),
        },
    }
}

impl Run {
    /// The tokens above which the provider may compact on its side, when
    /// compaction includes the provider's own and the run has a budget:
    /// the compaction threshold (or target) of the limit.
    pub(super) fn compact_above(&self, guard: Option<&Guard>) -> Option<u64> {
        let compaction = self.options.compaction.as_ref().filter(|c| c.uses_provider())?;
        let share = compaction.threshold.unwrap_or(compaction.target);
        guard.map(|g| (share * g.limit() as f64) as u64)
    }

    /// This step's settings before any hook: the run's options.
    pub(super) fn settings(&self, catalog: &ToolCatalog) -> StepSettings {
        StepSettings {
            system: self.system_prompt(catalog),
            active_tools: None,
            tool_choice: self.options.tool_choice.clone(),
            temperature: self.options.temperature,
            top_p: self.options.top_p,
            max_output_tokens: self.options.max_output_tokens,
            parallel_tool_calls: Some(self.options.parallel_tool_calls),
            provider_options: self.options.provider_options.clone(),
            reasoning: self.options.reasoning,
        }
    }

    /// The request of a step with `history`, offering `tools` (narrowed by
    /// the hook's active tools) and asking the provider to compact above
    /// `compact_above` tokens.
    pub(super) fn plan(
        &self,
        history: &Arc<Vec<Message>>,
        tools: &StepTools,
        settings: StepSettings,
        concluding: bool,
        compact_above: Option<u64>,
    ) -> Planned {
        // The concluding call declares every tool (its calls are refused
        // anyway); a narrowed list that names no tool keeps them declared
        // too and offers none (`ToolChoice::None`).
        let offered: Option<HashSet<String>> = settings
            .active_tools
            .filter(|_| !concluding)
            .map(|names| names.into_iter().collect());
        let narrowed: Option<Arc<Vec<_>>> = offered.as_ref().map(|names| {
            Arc::new(
                tools
                    .tools
                    .iter()
                    .filter(|d| names.contains(&d.name))
                    .cloned()
                    .collect(),
            )
        });
        let none_offered = narrowed.as_ref().is_some_and(|n| n.is_empty());
        let declared = match narrowed {
            Some(narrowed) if !none_offered => narrowed,
            _ => tools.tools.clone(),
        };
        let mut request = ModelRequest::default();
        request.system = settings.system;
        request.temperature = settings.temperature;
        request.top_p = settings.top_p;
        request.max_output_tokens = settings.max_output_tokens;
        request.cancellation = self.cancel.child_token();
        request.tools = declared;
        request.deferred_tools = tools.deferred.clone();
        request.provider_options = settings.provider_options;
        request.reasoning = settings.reasoning;
        request.prompt_caching = self.options.prompt_caching;
        request.compact_above = compact_above;
        request.unsupported_media = self.options.unsupported_media;
        if concluding {
            let mut messages = Vec::clone(history);
            messages.push(Message::user(CONCLUDE_INSTRUCTION));
            request.messages = Arc::new(messages);
            request.tool_choice = ToolChoice::None;
        } else {
            request.messages = history.clone();
            request.tool_choice = if none_offered {
                ToolChoice::None
            } else {
                settings.tool_choice
            };
            request.parallel_tool_calls = settings.parallel_tool_calls;
        }
        Planned { request, offered }
    }
}
