//! Server-sent events and newline-delimited JSON framing over a guarded body.
//!
//! SSE decoding is the `sse-stream` crate's (CRLF, CR-only, BOM, comments and
//! multi-line data handled per the WHATWG spec).

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream::BoxStream;
use loopwright_types::ModelError;

/// One frame of a provider stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The SSE `event:` name, if any (`None` for NDJSON).
    pub event: Option<String>,
    /// The `data:` payload (lines joined by `\n`) or the NDJSON line.
    pub data: String,
}

/// Decode SSE events from a byte stream; events without data are skipped.
pub fn sse_frames(
    bytes: BoxStream<'static, Result<Bytes, ModelError>>,
) -> BoxStream<'static, Result<Frame, ModelError>> {
    sse_stream::SseStream::from_bytes_stream(bytes)
        .filter_map(|item| async move {
            match item {
                Ok(sse) => sse.data.map(|data| {
                    Ok(Frame {
                        event: sse.event,
                        data,
                    })
                }),
                Err(sse_stream::Error::Body(inner)) => Some(Err(match inner.downcast::<ModelError>() {
                    Ok(e) => *e,
                    Err(other) => ModelError::stream_cut(other.to_string()),
                })),
                Err(other) => Some(Err(crate::error::invalid(
                    format!("undecodable event stream: {other}"),
                    "",
                ))),
            }
        })
        .boxed()
}

/// Split a byte stream into non-empty lines (LF or CRLF); a final line
/// without a line end is still delivered.
///
/// Each line is split off the front of the buffer without moving the bytes
/// after it, and a partial line is never searched twice, so the work is
/// linear in the body whatever the chunk and line sizes.
pub fn ndjson_frames(
    bytes: BoxStream<'static, Result<Bytes, ModelError>>,
) -> BoxStream<'static, Result<Frame, ModelError>> {
    let state = Lines {
        bytes,
        buf: BytesMut::new(),
        searched: 0,
    };
    futures::stream::unfold(Some(state), |state| async move {
        let mut state = state?;
        loop {
            if let Some(pos) = state.buf[state.searched..].iter().position(|b| *b == b'\n') {
                let line = state.buf.split_to(state.searched + pos + 1);
                state.searched = 0;
                let text = String::from_utf8_lossy(&line);
                let text = text.trim();
                if text.is_empty() {
                    continue;
                }
                let frame = Frame {
                    event: None,
                    data: text.to_owned(),
                };
                return Some((Ok(frame), Some(state)));
            }
            state.searched = state.buf.len();
            match state.bytes.next().await {
                Some(Ok(chunk)) => state.buf.extend_from_slice(&chunk),
                Some(Err(e)) => return Some((Err(e), None)),
                None => {
                    let text = String::from_utf8_lossy(&state.buf).trim().to_owned();
                    if text.is_empty() {
                        return None;
                    }
                    return Some((
                        Ok(Frame {
                            event: None,
                            data: text,
                        }),
                        None,
                    ));
                }
            }
        }
    })
    .boxed()
}

/// [`ndjson_frames`]'s state: the body, the bytes not yet split into
/// lines, and how far into them no line end was found.
struct Lines {
    bytes: BoxStream<'static, Result<Bytes, ModelError>>,
    buf: BytesMut,
    searched: usize,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    async fn frames(chunks: &[&'static [u8]]) -> Vec<Frame> {
        let bytes = futures::stream::iter(
            chunks
                .iter()
                .map(|c| Ok(Bytes::from_static(c)))
                .collect::<Vec<_>>(),
        )
        .boxed();
        sse_frames(bytes).map(|r| r.unwrap()).collect().await
    }

    fn f(event: Option<&str>, data: &str) -> Frame {
        Frame {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[tokio::test]
    async fn sse_handles_bom_crlf_cr_comments_and_multiline() {
        let got = frames(&[
            b"\xEF\xBB\xBF: comment\r\ndata: a\r\n\r\n",
            b"event: e\rdata: b\r\r",
            b"data: c1\ndata: c2\n\n:ping\n\n",
            b"data:d",
            b"\n\n",
        ])
        .await;
        assert_eq!(
            got,
            vec![f(None, "a"), f(Some("e"), "b"), f(None, "c1\nc2"), f(None, "d")]
        );
    }

    #[tokio::test]
    async fn sse_split_crlf_across_chunks() {
        let got = frames(&[b"data: x\r", b"\n\r", b"\ndata: y\r\n\r\n"]).await;
        assert_eq!(got, vec![f(None, "x"), f(None, "y")]);
    }

    #[tokio::test]
    async fn sse_error_is_passed_through() {
        let bytes = futures::stream::iter(vec![
            Ok(Bytes::from_static(b"data: a\n\n")),
            Err(ModelError::Cancelled),
        ])
        .boxed();
        let got: Vec<_> = sse_frames(bytes).collect().await;
        assert!(matches!(got[1], Err(ModelError::Cancelled)));
    }

    #[tokio::test]
    async fn ndjson_lines() {
        let bytes = futures::stream::iter(
            [&b"{\"a\":1}\r\n{\"b\""[..], b":2}\n\n", b"{\"c\":3}"].map(|c| Ok(Bytes::copy_from_slice(c))),
        )
        .boxed();
        let got: Vec<_> = ndjson_frames(bytes).map(|r| r.unwrap().data).collect().await;
        assert_eq!(got, vec!["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
        // A line spread over several chunks, its end in a chunk with the next.
        let pieces = [&b"{\"x\":"[..], b"\"yy", b"y\"}", b"\n{\"z\":1}\n"];
        let bytes = futures::stream::iter(pieces.map(|c| Ok(Bytes::copy_from_slice(c)))).boxed();
        let got: Vec<_> = ndjson_frames(bytes).map(|r| r.unwrap().data).collect().await;
        assert_eq!(got, vec!["{\"x\":\"yyy\"}", "{\"z\":1}"]);
    }
}
