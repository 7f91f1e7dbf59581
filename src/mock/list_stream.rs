//! The CRIListStreaming RPCs on the mock: each answers what its unary twin would, filters
//! included, split over a server stream. api.proto leaves the size of each message to the
//! runtime but wants every message to carry at least one item, every item in exactly one
//! message, and the stream closed once all are sent; the mock cuts a message before it would
//! outgrow a budget the kubelet's 16 MiB limit takes with room (or, under the other-runtime
//! profile, sends one item per message).

use std::pin::Pin;

use futures::Stream;
use prost::Message;
use tonic::Status;

use super::{Defect, Freedom, Inner, MockRuntime};

/// At most this many items in one message.
const BATCH_ITEMS: usize = 100;

/// A message is cut before its items' encoded size passes this; an item larger on its own
/// still goes, alone.
const BATCH_BYTES: usize = 4 * 1024 * 1024;

/// The stream type of every streaming list.
pub(crate) type ListStream<M> = Pin<Box<dyn Stream<Item = Result<M, Status>> + Send + 'static>>;

/// Splits `items` into the messages the mock sends, each made by `message`.
pub(crate) fn stream<T, M>(
    inner: &Inner,
    items: Vec<T>,
    message: impl Fn(Vec<T>) -> M,
) -> ListStream<M>
where
    T: Message + Clone,
    M: Send + 'static,
{
    let per_message = if MockRuntime::takes(inner, Freedom::StreamOneItemPerMessage) {
        1
    } else {
        BATCH_ITEMS
    };
    let repeated = MockRuntime::has(inner, Defect::StreamItemRepeated)
        .then(|| items.first().cloned())
        .flatten();
    let mut messages: Vec<M> = batches(items, per_message, BATCH_BYTES)
        .into_iter()
        .map(&message)
        .collect();
    if let Some(item) = repeated {
        messages.push(message(vec![item]));
    }
    Box::pin(futures::stream::iter(messages.into_iter().map(Ok)))
}

/// Cuts `items` into runs of at most `per_message` items and `budget` encoded bytes (an item
/// over the budget alone makes a run of one); none is empty, and their order is kept.
fn batches<T: Message>(items: Vec<T>, per_message: usize, budget: usize) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = Vec::new();
    let mut current: Vec<T> = Vec::new();
    let mut bytes = 0;
    for item in items {
        // Each item is a length-delimited field of its message.
        let size = item.encoded_len() + 8;
        if !current.is_empty() && (current.len() == per_message || bytes + size > budget) {
            out.push(std::mem::take(&mut current));
            bytes = 0;
        }
        bytes += size;
        current.push(item);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::cri::v1;

    fn sandbox(id: &str, annotation_bytes: usize) -> v1::PodSandbox {
        v1::PodSandbox {
            id: id.to_owned(),
            annotations: [("pad".to_owned(), "x".repeat(annotation_bytes))].into(),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::none(0, 0, &[])]
    #[case::one_message_holds_a_few(3, 10, &[3])]
    #[case::the_count_cuts(250, 10, &[100, 100, 50])]
    #[case::the_bytes_cut(5, 1_500_000, &[2, 2, 1])]
    #[case::an_item_over_the_budget_goes_alone(2, 5_000_000, &[1, 1])]
    fn batches_are_never_empty_and_keep_every_item_once_in_order(
        #[case] count: usize,
        #[case] annotation_bytes: usize,
        #[case] sizes: &[usize],
    ) {
        let items: Vec<_> = (0..count)
            .map(|i| sandbox(&i.to_string(), annotation_bytes))
            .collect();
        let cut = batches(items, BATCH_ITEMS, BATCH_BYTES);
        let lengths: Vec<usize> = cut.iter().map(Vec::len).collect();
        assert_eq!(lengths, sizes);
        let ids: Vec<String> = cut.into_iter().flatten().map(|s| s.id).collect();
        let expected: Vec<String> = (0..count).map(|i| i.to_string()).collect();
        assert_eq!(ids, expected);
    }

    #[test]
    fn one_item_per_message_cuts_after_each() {
        let items: Vec<_> = (0..3).map(|i| sandbox(&i.to_string(), 0)).collect();
        let lengths: Vec<usize> = batches(items, 1, BATCH_BYTES)
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(lengths, [1, 1, 1]);
    }
}
