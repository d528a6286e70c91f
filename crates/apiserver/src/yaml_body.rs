//! Decoding YAML request bodies with the alias rule of Go's decoder.
//!
//! kube-apiserver turns YAML into JSON with sigs.k8s.io/yaml, that is go-yaml, which
//! refuses a document once more than 1,000 nodes have been decoded, more than 100 of them
//! through aliases, and the share decoded through aliases is over 99% (falling to 10% from
//! 400,000 to 4,000,000 nodes): "yaml: document contains excessive aliasing"
//! (`decode.go`, `allowedAliasRatio`). A 400-byte billion-laughs document is refused
//! after about a thousand nodes instead of being expanded: [`check_aliases`] counts the
//! nodes a decode would make, aliases expanded, from the parser's events alone (each
//! anchored node's expanded size is known when it ends, before any alias can use it),
//! before anything is built.
//!
//! Documents within that rule may still hold ~400,000 alias-made nodes, as in Go; the
//! decoder's own node and event budgets are raised to what a body within the request
//! size limit can hold without aliases, so that the rule above decides.

use serde_json::Value;
use serde_saphyr::granit_parser::{Event, Parser};

/// Go's thresholds (`go-yaml` `decode.go`).
const MIN_DECODED: u64 = 1_000;
const MIN_ALIASED: u64 = 100;
const RATIO_RANGE_LOW: u64 = 400_000;
const RATIO_RANGE_HIGH: u64 = 4_000_000;

/// Why a YAML body was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum YamlBodyError {
    /// The document expands through aliases more than Go's decoder allows.
    #[error(
        "yaml: document contains excessive aliasing ({aliased} of the first {decoded} nodes come from aliases)"
    )]
    ExcessiveAliasing {
        /// Nodes decoded when the rule tripped.
        decoded: u64,
        /// How many of them through aliases.
        aliased: u64,
    },
    /// Not YAML, or not a JSON-like document.
    #[error("{0}")]
    Syntax(String),
}

/// Decodes a YAML body (one document) into JSON.
///
/// # Errors
///
/// [`YamlBodyError::ExcessiveAliasing`] for alias bombs, [`YamlBodyError::Syntax`] for
/// anything else the decoder refuses.
pub(crate) fn decode(text: &str) -> Result<Value, YamlBodyError> {
    // Without a `*` there is no alias to expand.
    if text.contains('*') {
        check_aliases(text)?;
    }
    serde_saphyr::from_str_with_options(text, options())
        .map_err(|err| YamlBodyError::Syntax(err.to_string()))
}

/// The decoder's limits: structure and aliases are bounded by the body size limit and
/// [`check_aliases`], so its own budgets sit above what those allow.
fn options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = 8_000_000;
    budget.max_events = 16_000_000;
    budget.max_aliases = 4_000_000;
    budget.enforce_alias_anchor_ratio = false;
    let mut aliases = serde_saphyr::options::AliasLimits::default();
    aliases.max_total_replayed_events = 2 * RATIO_RANGE_HIGH as usize;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits = aliases;
    options
}

/// The share of decoded nodes Go lets come from aliases after `decoded` nodes.
fn allowed_alias_ratio(decoded: u64) -> f64 {
    if decoded <= RATIO_RANGE_LOW {
        0.99
    } else if decoded >= RATIO_RANGE_HIGH {
        0.10
    } else {
        let range = (RATIO_RANGE_HIGH - RATIO_RANGE_LOW) as f64;
        0.99 - 0.89 * ((decoded - RATIO_RANGE_LOW) as f64 / range)
    }
}

/// Counts, per document, the nodes Go's decoder would decode (the document node, every
/// scalar, sequence, mapping and alias node, and everything an alias expands to) and
/// refuses as soon as its rule trips. Syntax errors are left to the decoder.
///
/// Go checks at every node; here the check runs after every node and after every whole
/// alias expansion, which trips at the same documents: within one expansion both counts
/// grow by one per node, so the aliased share only rises and the allowed share only
/// falls, and the rule, once true inside an expansion, is true at its end.
///
/// # Errors
///
/// [`YamlBodyError::ExcessiveAliasing`].
pub(crate) fn check_aliases(text: &str) -> Result<(), YamlBodyError> {
    // Expanded size (nodes) of each anchored node that has ended, by anchor id.
    let mut anchored: Vec<u64> = Vec::new();
    // Open collections: their anchor id (0: none) and size so far.
    let mut open: Vec<(usize, u64)> = Vec::new();
    let (mut decoded, mut aliased) = (0u64, 0u64);
    let check = |decoded: u64, aliased: u64| {
        if aliased > MIN_ALIASED
            && decoded > MIN_DECODED
            && aliased as f64 / decoded as f64 > allowed_alias_ratio(decoded)
        {
            Err(YamlBodyError::ExcessiveAliasing { decoded, aliased })
        } else {
            Ok(())
        }
    };
    // A node of `size` nodes (`via_alias` of them through aliases) ended: it counts in
    // its parent's size, and its anchor now stands for it.
    let ended =
        |open: &mut Vec<(usize, u64)>, anchored: &mut Vec<u64>, anchor: usize, size: u64| {
            if let Some((_, parent)) = open.last_mut() {
                *parent = parent.saturating_add(size);
            }
            if anchor != 0 {
                if anchored.len() <= anchor {
                    anchored.resize(anchor + 1, 0);
                }
                anchored[anchor] = size;
            }
        };
    for event in Parser::new_from_str(text) {
        let Ok((event, _)) = event else {
            // The decoder reports syntax errors with their place.
            return Ok(());
        };
        match event {
            Event::DocumentStart(..) => {
                open.clear();
                (decoded, aliased) = (1, 0);
            }
            Event::Scalar(_, _, anchor, _) => {
                decoded = decoded.saturating_add(1);
                check(decoded, aliased)?;
                ended(&mut open, &mut anchored, anchor, 1);
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                decoded = decoded.saturating_add(1);
                check(decoded, aliased)?;
                open.push((anchor, 1));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, size)) = open.pop() {
                    ended(&mut open, &mut anchored, anchor, size);
                }
            }
            Event::Alias(anchor) => {
                // The alias node itself, then what it stands for, all through an alias.
                // An anchor still open (a node containing its own alias) expands to
                // nothing here; the decoder refuses it.
                let expansion = anchored.get(anchor).copied().unwrap_or(0);
                decoded = decoded.saturating_add(1);
                check(decoded, aliased)?;
                decoded = decoded.saturating_add(expansion);
                aliased = aliased.saturating_add(expansion);
                check(decoded, aliased)?;
                ended(&mut open, &mut anchored, 0, expansion.saturating_add(1));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn laughs(levels: usize) -> String {
        let mut doc = String::from("a0: &a0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
        for level in 1..levels {
            let refs = vec![format!("*a{}", level - 1); 9].join(",");
            doc.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        doc
    }

    #[test]
    fn a_billion_laughs_is_refused_before_it_is_built() {
        let err = check_aliases(&laughs(9)).err();
        let Some(YamlBodyError::ExcessiveAliasing { decoded, aliased }) = err else {
            panic!("expected a refusal, got {err:?}");
        };
        // Refused at the end of the first alias that trips the rule, before any is built.
        assert!(decoded < 10_000, "{decoded}");
        assert!(aliased * 100 > decoded * 99, "{aliased} of {decoded}");
        assert!(matches!(
            decode(&laughs(9)),
            Err(YamlBodyError::ExcessiveAliasing { .. })
        ));
    }

    #[test]
    fn modest_aliasing_decodes_as_go_decodes_it() {
        // Three levels: 9 + 81 + 729 expanded nodes, under Go's 1,000-node floor.
        let value = decode(&laughs(3));
        let Ok(value) = value else {
            panic!("{value:?}");
        };
        assert_eq!(value["a2"].as_array().map(Vec::len), Some(9));
        assert_eq!(value["a2"][8][8][8], "lol");
        // Many aliases of one small anchor among as many plain nodes.
        let mut doc = String::from("base: &b {x: 1}\nitems:\n");
        for i in 0..2_000 {
            doc.push_str(&format!("- {{n: {i}, ref: *b}}\n"));
        }
        assert!(decode(&doc).is_ok());
    }

    #[test]
    fn the_allowed_share_falls_from_99_to_10_percent() {
        assert!((allowed_alias_ratio(1_000) - 0.99).abs() < 1e-9);
        assert!((allowed_alias_ratio(2_200_000) - 0.545).abs() < 1e-9);
        assert!((allowed_alias_ratio(9_000_000) - 0.10).abs() < 1e-9);
    }

    /// YAML documents with anchors and aliases at random places, some malformed.
    fn document() -> impl Strategy<Value = String> {
        let token = prop_oneof![
            Just("a: &x [1, 2, 3]\n".to_owned()),
            Just("b: *x\n".to_owned()),
            Just("c: [*x, *x, *x, *x, *x, *x, *x, *x]\n".to_owned()),
            Just("d: &y {k: *x, l: [*x, *x]}\n".to_owned()),
            Just("e: [*y, *y, *y, *y, *y, *y, *y, *y, *y, *y]\n".to_owned()),
            Just("f: &z [*y, *y, *y, *y, *y, *y, *y, *y, *y, *y]\n".to_owned()),
            Just("g: [*z, *z, *z, *z, *z, *z, *z, *z, *z, *z]\n".to_owned()),
            Just("h: *nope\n".to_owned()),
            Just("i: &s scalar\nj: *s\n".to_owned()),
            Just("k: &r [1, *r]\n".to_owned()),
            Just("- list\n".to_owned()),
            Just("l: [unclosed\n".to_owned()),
            Just("---\n".to_owned()),
            "[a-z]{1,3}: [0-9]{1,4}\n",
        ];
        prop::collection::vec(token, 0..24).prop_map(|tokens| tokens.concat())
    }

    proptest! {
        #[test]
        fn random_yaml_with_aliases_is_decoded_or_refused_never_a_panic(doc in document()) {
            match decode(&doc) {
                Ok(_) | Err(YamlBodyError::Syntax(_)) => {}
                Err(YamlBodyError::ExcessiveAliasing { decoded, aliased }) => {
                    prop_assert!(decoded > MIN_DECODED && aliased > MIN_ALIASED);
                }
            }
        }
    }
}
