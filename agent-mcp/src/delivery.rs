//! Whether a failed `tools/call` send reached the server.
//!
//! Invariant: a call is sent again only when its send failed in a way that
//! proves the request never reached the server (the connection was
//! refused, the pipe to a dead child was broken, the socket was already
//! closed; rmcp's own "transport closed" before sending is handled by the
//! caller). Anything else (an HTTP error status, a
//! connection reset after the body was written, an unknown error) may have
//! been delivered and run: it becomes an error result, never a second run.

use std::error::Error;
use std::io;

/// Why a send failed, as far as delivery goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The request certainly did not reach the server: safe to resend.
    Never,
    /// The request may have reached the server (and run there).
    Maybe,
}

/// Classify a send error by walking its source chain.
pub(crate) fn classify(error: &(dyn Error + 'static)) -> Delivery {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(verdict) = classify_one(e) {
            return verdict;
        }
        next = e.source();
    }
    Delivery::Maybe
}

/// The verdict of one error in the chain, when this error decides it.
fn classify_one(e: &(dyn Error + 'static)) -> Option<Delivery> {
    if let Some(io) = e.downcast_ref::<io::Error>() {
        // A custom I/O error's payload is not its `source()`: look at it too.
        return io_verdict(io).or_else(|| io.get_ref().and_then(|inner| classify_one(inner)));
    }
    #[cfg(feature = "http")]
    {
        use rmcp::transport::streamable_http_client::StreamableHttpError;
        if let Some(e) = e.downcast_ref::<reqwest::Error>() {
            return Some(reqwest_verdict(e));
        }
        if let Some(e) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return match e {
                // Not a `#[source]`, so look inside here.
                StreamableHttpError::Client(inner) => Some(reqwest_verdict(inner)),
                StreamableHttpError::Io(io) => io_verdict(io),
                // Refused at the door (401/403): the request did not run.
                StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_) => {
                    Some(Delivery::Never)
                }
                // Including `TransportChannelClosed`: rmcp returns it both
                // when the worker had stopped before taking the request and
                // when it stopped with the request's POST in flight.
                _ => Some(Delivery::Maybe),
            };
        }
    }
    #[cfg(feature = "sse")]
    if let Some(e) = e.downcast_ref::<crate::sse::SseSendError>() {
        return Some(if e.reached_server() {
            Delivery::Maybe
        } else {
            Delivery::Never
        });
    }
    #[cfg(feature = "websocket")]
    if let Some(e) = e.downcast_ref::<tokio_tungstenite::tungstenite::Error>() {
        use tokio_tungstenite::tungstenite::Error as Ws;
        return match e {
            // The socket was closed before this frame was written.
            Ws::AlreadyClosed | Ws::ConnectionClosed => Some(Delivery::Never),
            Ws::Io(io) => io_verdict(io),
            _ => Some(Delivery::Maybe),
        };
    }
    None
}

/// Errors that prove nothing was written to a live peer; other I/O errors
/// decide nothing (an outer error may know more).
fn io_verdict(e: &io::Error) -> Option<Delivery> {
    match e.kind() {
        io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionRefused
        | io::ErrorKind::NotConnected
        | io::ErrorKind::AddrNotAvailable => Some(Delivery::Never),
        _ => None,
    }
}

#[cfg(feature = "http")]
fn reqwest_verdict(e: &reqwest::Error) -> Delivery {
    // A connect error: no connection, so no request bytes were sent.
    if e.is_connect() {
        Delivery::Never
    } else {
        Delivery::Maybe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] io::Error);

    #[test]
    fn a_broken_pipe_anywhere_in_the_chain_was_never_delivered() {
        let e = Outer(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(classify(&e), Delivery::Never);
    }

    #[test]
    fn a_reset_or_an_unknown_error_may_have_been_delivered() {
        let e = Outer(io::Error::from(io::ErrorKind::ConnectionReset));
        assert_eq!(classify(&e), Delivery::Maybe);
        let e = io::Error::other("something else");
        assert_eq!(classify(&e), Delivery::Maybe);
    }

    #[test]
    fn the_payload_of_a_custom_io_error_is_looked_at() {
        let inner = io::Error::from(io::ErrorKind::BrokenPipe);
        let e = io::Error::other(Outer(inner));
        assert_eq!(classify(&e), Delivery::Never);
    }

    #[cfg(feature = "http")]
    #[test]
    fn a_stopped_http_worker_may_have_sent() {
        use rmcp::transport::streamable_http_client::StreamableHttpError;
        let e: StreamableHttpError<reqwest::Error> = StreamableHttpError::TransportChannelClosed;
        assert_eq!(classify(&e), Delivery::Maybe);
        let e: StreamableHttpError<reqwest::Error> = StreamableHttpError::UnexpectedEndOfStream;
        assert_eq!(classify(&e), Delivery::Maybe);
    }

    #[cfg(feature = "websocket")]
    #[test]
    fn a_closed_socket_never_sent() {
        use tokio_tungstenite::tungstenite::Error as Ws;
        assert_eq!(classify(&Ws::AlreadyClosed), Delivery::Never);
        assert_eq!(classify(&Ws::Utf8(String::new())), Delivery::Maybe);
    }
}
