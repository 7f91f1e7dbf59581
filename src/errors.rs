//! Errors in words: an error and its causes, walked once for every report that spells them out.

use std::error::Error;

/// `err` and each of its sources in turn, outermost first.
pub fn causes<'a>(
    err: &'a (dyn Error + 'static),
) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(Some(err), |&current| current.source())
}

/// `err` with its causes on one line, `: ` between them.
pub fn chain(err: &(dyn Error + 'static)) -> String {
    causes(err)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Middle);

    #[derive(Debug, thiserror::Error)]
    #[error("middle")]
    struct Middle(#[source] std::io::Error);

    #[test]
    fn a_chain_spells_out_every_cause_in_order() {
        let err = Outer(Middle(std::io::Error::other("inner")));
        assert_eq!(chain(&err), "outer: middle: inner");
        assert_eq!(causes(&err).count(), 3);
    }

    #[test]
    fn an_error_without_a_source_is_its_own_words() {
        assert_eq!(chain(&std::io::Error::other("alone")), "alone");
    }
}
