//! Turns a stream of frames into a [`ModelStream`] through a provider's
//! [`Decoder`], enforcing the stream contract: an error ends the stream, and
//! a stream that ends before the provider's end marker is an error.

use std::collections::VecDeque;

use futures::StreamExt;
use futures::stream::BoxStream;
use loopwright_types::{ModelError, ModelEvent, ModelStream};

use crate::sse::Frame;

/// A provider's wire-format decoder.
pub(crate) trait Decoder: Send + 'static {
    /// Handle one frame, pushing the events it yields.
    fn frame(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;
    /// Whether the provider's end marker was seen; the driver then stops
    /// reading (the decoder has pushed `Finish`).
    fn is_done(&self) -> bool;
    /// The body ended: push `Finish` when the step did complete (for formats
    /// whose end marker is a finish reason), else fail.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;
}

/// The error for a body that ended before the end marker.
pub(crate) fn truncated(marker: &str) -> ModelError {
    ModelError::stream_cut(format!(
        "stream ended before the provider's end marker ({marker}); the step did not complete"
    ))
}

struct State<D> {
    frames: Option<BoxStream<'static, Result<Frame, ModelError>>>,
    decoder: D,
    queue: VecDeque<Result<ModelEvent, ModelError>>,
    /// Reused for every frame's events (no allocation per frame).
    out: Vec<ModelEvent>,
}

/// Drive `frames` through `decoder` into a model stream.
pub(crate) fn drive<D: Decoder>(
    frames: BoxStream<'static, Result<Frame, ModelError>>,
    decoder: D,
) -> ModelStream {
    let state = State {
        frames: Some(frames),
        decoder,
        queue: VecDeque::new(),
        out: Vec::new(),
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.queue.pop_front() {
                if item.is_err() {
                    st.queue.clear();
                    st.frames = None;
                }
                return Some((item, st));
            }
            let frames = st.frames.as_mut()?;
            let mut out = std::mem::take(&mut st.out);
            let result = match frames.next().await {
                Some(Ok(frame)) => st.decoder.frame(frame, &mut out).map(|()| st.decoder.is_done()),
                Some(Err(e)) => Err(e),
                None => st.decoder.end(&mut out).map(|()| true),
            };
            st.queue.extend(out.drain(..).map(Ok));
            st.out = out;
            match result {
                Ok(false) => {}
                Ok(true) => st.frames = None,
                Err(e) => {
                    st.frames = None;
                    st.queue.push_back(Err(e));
                }
            }
        }
    })
    .boxed()
}
