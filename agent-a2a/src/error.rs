//! What can go wrong reaching a remote A2A agent.

/// Why a remote agent could not be reached or used.
///
/// ```
/// let e = loopwright_a2a::A2aError::Origin {
///     agent: "weather".into(),
///     configured: "https://weather.example".into(),
///     card: "https://elsewhere.example".into(),
/// };
/// assert!(e.to_string().contains("another origin"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum A2aError {
    /// The configuration is unusable (a URL or header), named.
    #[error("A2A agent {agent}: {message}")]
    Config {
        /// The configured name.
        agent: String,
        /// What is wrong.
        message: String,
    },
    /// The request could not be made or its answer read.
    #[error("A2A agent {agent}: {what}: {source}")]
    Http {
        /// The configured name.
        agent: String,
        /// What was asked.
        what: String,
        /// Why it failed.
        #[source]
        source: reqwest::Error,
    },
    /// The agent answered something that is not what A2A says it sends.
    #[error("A2A agent {agent}: {what}: {message}")]
    Protocol {
        /// The configured name.
        agent: String,
        /// What was asked.
        what: String,
        /// What was wrong with the answer.
        message: String,
    },
    /// The agent answered with one of the protocol's errors.
    #[error("A2A agent {agent}: {what}: error {code}: {message}")]
    Remote {
        /// The configured name.
        agent: String,
        /// What was asked.
        what: String,
        /// The protocol's error code (-32001 task not found, ...).
        code: i32,
        /// The agent's message.
        message: String,
    },
    /// The card names endpoints of another origin than the configured URL:
    /// refused, so a card cannot send the agent's messages (and headers)
    /// elsewhere.
    #[error(
        "A2A agent {agent}: its card at {configured} names an endpoint of another origin ({card}); \
         configure that origin's URL if it is the agent's"
    )]
    Origin {
        /// The configured name.
        agent: String,
        /// The configured URL.
        configured: String,
        /// The endpoint the card names.
        card: String,
    },
}
