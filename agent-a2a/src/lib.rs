//! Remote [A2A](https://a2a-protocol.org) agents as
//! [loopwright](https://docs.rs/loopwright) tools.
//!
//! Each configured agent's card is read from its well-known path (with the
//! configured headers and `A2A-Version: 1.0`), and the agent becomes one
//! tool, named as configured, described by its card (its description and
//! skills), taking `{"message", "context_id"?}`. A call sends the message
//! as a task (streamed when the card says the agent streams, else sent and
//! read until it ends) and answers with the agent's answer, its data and
//! the `context_id` that goes on with the conversation.
//!
//! ```no_run
//! use loopwright_a2a::{A2aAgent, A2aAgents};
//! use loopwright_core::{Agent, ToolSet};
//! # fn demo(model: std::sync::Arc<dyn loopwright_core::LanguageModel>) {
//! let remote = A2aAgents::new()
//!     .agent(A2aAgent::new("weather", "https://agents.example/weather").header("Authorization", "Bearer k"));
//! let agent = Agent::builder(model)
//!     .tools(ToolSet::builder().source(remote).build()) // the tool `a2a__weather`
//!     .build();
//! # drop(agent); }
//! ```
//!
//! The mapping, one rule each:
//! - the remote task asks for input (`input-required`): the question goes
//!   to the person behind the run as a form (`{"approve", "reason"}`, an
//!   `input_requested` event, as an MCP server's elicitation does), and
//!   the answer goes back as the next message's data part; nobody to ask,
//!   or a refusal, is `{"approve": false, "reason"}`;
//! - it needs authentication (`auth-required`): the tool's error result
//!   says so and where the agent's headers are configured;
//! - it fails, is rejected or cancelled: the tool's error result names the
//!   state and what the agent said;
//! - the call is cancelled (the run was, or its timeout passed): the remote
//!   task is cancelled (`CancelTask`).
//!
//! Invariants: the card must name a JSON-RPC v1.0 endpoint of the
//! configured URL's origin, or the agent is left out ([`A2aError::Origin`]),
//! so the configured headers go nowhere else; an agent whose card cannot be
//! read is left out with a warning (the others are offered), and read again
//! at the next listing; cards that were read are kept.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod card;
mod error;
mod rpc;
mod task;
mod tool;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use loopwright_types::{Tool, ToolDefinition, ToolSource, ToolSourceError};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

pub use error::A2aError;

/// One remote agent: its name (the tool's), its URL (where its card is, or
/// the card's own URL) and the headers every request carries.
///
/// ```
/// let weather = loopwright_a2a::A2aAgent::new("weather", "https://agents.example/weather")
///     .header("Authorization", "Bearer k")
///     .timeout(std::time::Duration::from_secs(600));
/// assert_eq!(weather.name(), "weather");
/// ```
#[derive(Debug, Clone)]
pub struct A2aAgent {
    name: String,
    url: String,
    headers: Vec<(String, String)>,
    timeout: Option<Duration>,
}

impl A2aAgent {
    /// Agent `name` at `url`.
    ///
    /// ```
    /// let clerk = loopwright_a2a::A2aAgent::new("clerk", "http://127.0.0.1:8090/clerk");
    /// assert_eq!(clerk.name(), "clerk");
    /// ```
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            headers: Vec::new(),
            timeout: None,
        }
    }

    /// A header every request carries (a key, say).
    ///
    /// ```
    /// let clerk = loopwright_a2a::A2aAgent::new("clerk", "https://a.example/clerk").header("Authorization", "Bearer k");
    /// # drop(clerk);
    /// ```
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// How long one call may take (the agent's tool timeout otherwise).
    ///
    /// ```
    /// let slow = loopwright_a2a::A2aAgent::new("slow", "https://a.example/slow").timeout(std::time::Duration::from_secs(900));
    /// # drop(slow);
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The configured name.
    ///
    /// ```
    /// assert_eq!(loopwright_a2a::A2aAgent::new("w", "http://h/w").name(), "w");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    fn headers(&self) -> Result<HeaderMap, A2aError> {
        let mut map = HeaderMap::new();
        for (name, value) in &self.headers {
            let bad = |what: &str| A2aError::Config {
                agent: self.name.clone(),
                message: format!("header `{name}`: invalid {what}"),
            };
            let key = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
            let value = HeaderValue::from_str(value).map_err(|_| bad("value"))?;
            map.insert(key, value);
        }
        Ok(map)
    }
}

/// Remote A2A agents as one tool source (`a2a` unless renamed): a tool per
/// agent.
///
/// ```
/// use loopwright_types::ToolSource;
/// let agents = loopwright_a2a::A2aAgents::new()
///     .agent(loopwright_a2a::A2aAgent::new("weather", "http://127.0.0.1:8090/weather"));
/// assert_eq!(agents.name(), "a2a");
/// ```
pub struct A2aAgents {
    name: String,
    agents: Vec<A2aAgent>,
    client: Option<reqwest::Client>,
    listed: Mutex<Option<Vec<Arc<dyn Tool>>>>,
    warnings: Mutex<Vec<String>>,
}

impl Default for A2aAgents {
    fn default() -> Self {
        Self::new()
    }
}

impl A2aAgents {
    /// No agents yet, named `a2a`.
    ///
    /// ```
    /// use loopwright_types::ToolSource;
    /// assert_eq!(loopwright_a2a::A2aAgents::new().name(), "a2a");
    /// ```
    pub fn new() -> Self {
        Self {
            name: "a2a".to_owned(),
            agents: Vec::new(),
            client: None,
            listed: Mutex::new(None),
            warnings: Mutex::new(Vec::new()),
        }
    }

    /// Add `agent`.
    ///
    /// ```
    /// use loopwright_a2a::{A2aAgent, A2aAgents};
    /// let remote = A2aAgents::new().agent(A2aAgent::new("a", "http://h/a")).agent(A2aAgent::new("b", "http://h/b"));
    /// # drop(remote);
    /// ```
    pub fn agent(mut self, agent: A2aAgent) -> Self {
        self.agents.push(agent);
        self
    }

    /// The source's name (its tools are `{name}__{agent}`).
    ///
    /// ```
    /// use loopwright_types::ToolSource;
    /// assert_eq!(loopwright_a2a::A2aAgents::new().named("remote").name(), "remote");
    /// ```
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The HTTP client to use (one with ring as rustls' provider is built
    /// otherwise).
    ///
    /// ```no_run
    /// let remote = loopwright_a2a::A2aAgents::new().client(reqwest::Client::new());
    /// # drop(remote);
    /// ```
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    fn http(&self) -> reqwest::Client {
        self.client.clone().unwrap_or_else(|| {
            if rustls::crypto::CryptoProvider::get_default().is_none() {
                // Another thread may win the race: either way one is installed.
                let _ = rustls::crypto::ring::default_provider().install_default();
            }
            reqwest::Client::new()
        })
    }

    /// Agent `agent` as a tool: its card read and checked.
    async fn connect(&self, agent: &A2aAgent, client: reqwest::Client) -> Result<Arc<dyn Tool>, A2aError> {
        let remote = rpc::Remote {
            name: agent.name.clone(),
            url: agent.url.clone(),
            headers: agent.headers()?,
            client,
        };
        let (card, endpoint) = card::fetch(&remote).await?;
        let mut description = card.description.clone();
        let skills: Vec<String> = card
            .skills
            .iter()
            .map(|s| format!("{}: {}", s.name, s.description))
            .collect();
        if !skills.is_empty() {
            description = format!("{description}\nSkills: {}", skills.join("; "));
        }
        description.push_str("\nAn A2A agent: it answers the message; pass its context_id to go on.");
        Ok(Arc::new(tool::RemoteAgent {
            definition: ToolDefinition::new(agent.name.clone(), description, tool::input_schema()),
            streaming: card.capabilities.streaming == Some(true),
            remote,
            endpoint,
            timeout: agent.timeout,
        }))
    }
}

#[async_trait]
impl ToolSource for A2aAgents {
    fn name(&self) -> &str {
        &self.name
    }

    async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError> {
        if let Some(listed) = self.listed.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Ok(listed);
        }
        let client = self.http();
        let connected =
            futures::future::join_all(self.agents.iter().map(|a| self.connect(a, client.clone()))).await;
        let mut tools = Vec::new();
        let mut failed = Vec::new();
        for outcome in connected {
            match outcome {
                Ok(tool) => tools.push(tool),
                Err(e) => failed.push(e.to_string()),
            }
        }
        if tools.is_empty() && !failed.is_empty() {
            return Err(ToolSourceError::new(&self.name, failed.join("; ")));
        }
        if failed.is_empty() {
            *self.listed.lock().unwrap_or_else(|p| p.into_inner()) = Some(tools.clone());
        }
        *self.warnings.lock().unwrap_or_else(|p| p.into_inner()) = failed;
        Ok(tools)
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
