//! Phase 1, prepare a step: the catalog as its sources list it now, the
//! tools offered (tool search's offer), whether the step concludes, the
//! context budget's admission (compacting first), the `prepare_step`
//! hook, and the request as it goes out (policies shape it last).
//!
//! Invariants: the budget decides before the hook, so the hook is told
//! whether the step concludes (text the hook adds is not counted); tools
//! stay declared on the concluding step (a history holding tool calls must
//! be sent with tools), offered to none (`ToolChoice::None`); a cancelled
//! run starts no step.

use std::collections::HashSet;
use std::sync::Arc;

use loopwright_types::{Message, ModelRequest, ToolChoice};

use super::drive::{Ending, LoopState, Run};
use super::hooks::{StepContext, StepSettings};
use super::options::CONCLUDE_INSTRUCTION;
use super::policy::{Flow, Policies, Step};

/// What a step sends, and the step as the later phases see it.
pub(super) struct Prepared {
    pub step: Step,
    pub request: ModelRequest,
}

impl Run {
    /// Prepare the next step, or say why the run ends before it.
    pub(super) async fn prepare(
        &self,
        lp: &mut LoopState,
        policies: &mut Policies,
    ) -> Result<Prepared, Ending> {
        if self.cancel.is_cancelled() {
            return Err(Ending::Cancelled);
        }
        self.refresh_catalog(lp, policies).await?;
        let number = lp.progress.steps + 1;
        let mut step = Step {
            number,
            // `max_steps` steps may use tools (at least one, whatever the
            // field was set to); the one after concludes.
            concluding: number > self.options.max_steps.max(1) || lp.conclude_next,
            settings: self.settings(&lp.catalog),
            tools: policies.offer(&lp.catalog, &lp.history),
            offered: None,
        };
        let before = lp.history.clone();
        if let Flow::End(end) = policies.admit(self, lp, &mut step).await {
            return Err(end);
        }
        if !Arc::ptr_eq(&before, &lp.history) {
            step.tools = policies.offer(&lp.catalog, &lp.history);
        }
        if let Some(hook) = &self.options.hooks.prepare_step {
            let ctx = StepContext {
                step: number,
                concluding: step.concluding,
                messages: &lp.history,
                steps: &lp.progress.summaries,
            };
            hook(&ctx, &mut step.settings);
        }
        let mut request = self.request(&lp.history, &mut step);
        policies.shape(self, &step, &mut request);
        Ok(Prepared { step, request })
    }

    /// The catalog as the tool sets list it now (a source's tools may have
    /// changed), and the one the run offers from it.
    async fn refresh_catalog(&self, lp: &mut LoopState, policies: &mut Policies) -> Result<(), Ending> {
        let latest = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(Ending::Cancelled),
            catalog = self.tools.catalog() => catalog,
        };
        if !Arc::ptr_eq(&latest, &lp.base) {
            lp.base = latest;
            lp.catalog = policies.catalog(&lp.base);
            self.warn_all(lp.catalog.warnings()).await;
        }
        Ok(())
    }

    /// This step's settings before any hook: the run's options.
    fn settings(&self, catalog: &loopwright_types::toolset::ToolCatalog) -> StepSettings {
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

    /// The request of `step` on `history`: its settings, its tools
    /// (narrowed by the hook's active tools, recorded as the step's
    /// `offered`), the concluding instruction on the concluding step.
    fn request(&self, history: &Arc<Vec<Message>>, step: &mut Step) -> ModelRequest {
        let settings = step.settings.clone();
        // The concluding call declares every tool (its calls are refused
        // anyway); a narrowed list that names no tool keeps them declared
        // too and offers none (`ToolChoice::None`).
        let offered: Option<HashSet<String>> = settings
            .active_tools
            .filter(|_| !step.concluding)
            .map(|names| names.into_iter().collect());
        let narrowed: Option<Arc<Vec<_>>> = offered.as_ref().map(|names| {
            Arc::new(
                step.tools
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
            _ => step.tools.tools.clone(),
        };
        step.offered = offered;
        let mut request = ModelRequest::default();
        request.system = settings.system;
        request.temperature = settings.temperature;
        request.top_p = settings.top_p;
        request.max_output_tokens = settings.max_output_tokens;
        request.cancellation = self.cancel.child_token();
        request.tools = declared;
        request.deferred_tools = step.tools.deferred.clone();
        request.provider_options = settings.provider_options;
        request.reasoning = settings.reasoning;
        request.prompt_caching = self.options.prompt_caching;
        request.unsupported_media = self.options.unsupported_media;
        if step.concluding {
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
        request
    }
}
