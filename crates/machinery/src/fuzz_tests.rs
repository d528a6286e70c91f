//! Property-based fuzzing of every parser in this crate that takes outside input: the watch
//! stream decoder, the list stream decoder, the object decoder and the byte-level item
//! edits, label and field selectors, the stream channel frames, and the protobuf codec. Each property feeds arbitrary bytes (or arbitrary
//! chunkings of valid input) and asserts no panic and, where it applies, the same result
//! whatever the chunking. Longer runs: `PROPTEST_CASES=100000 cargo test -p
//! kubeclient-machinery fuzz`.

use k8s_openapi::api::core::v1::Pod;
use proptest::prelude::*;

use crate::list::{ListStreamDecoder, peek_item_meta, strip_managed_fields};
use crate::{DynamicObject, FieldSelector, LabelSelector, WatchStreamDecoder, decode_object};

/// Bytes that look like JSON often enough to reach deep paths.
fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        proptest::collection::vec(
            prop::sample::select(
                b"{}[]\":,\\ nulltruefalse0123456789-.eEabcmetadatnsiuvkr\n".to_vec()
            ),
            0..300
        ),
    ]
}

/// Splits `bytes` at the given cut points.
fn chunks(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for point in points {
        out.push(bytes[start..point].to_vec());
        start = point;
    }
    out.push(bytes[start..].to_vec());
    out
}

fn list_items(pieces: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, String> {
    let mut decoder = ListStreamDecoder::new().with_max_item_len(4096);
    let mut items = Vec::new();
    for piece in pieces {
        decoder.push(piece);
        if let Some(batch) = decoder.next_batch().map_err(|e| e.to_string())? {
            items.extend(batch.items().map(<[u8]>::to_vec));
        }
    }
    decoder.finish().map_err(|e| e.to_string())?;
    Ok(items)
}

proptest! {
    #[test]
    fn fuzz_watch_stream_decoder_never_panics(bytes in jsonish(), cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let mut decoder = WatchStreamDecoder::new().with_max_event_len(512);
        for piece in chunks(&bytes, &cuts) {
            decoder.push(&piece);
            while decoder.next_event::<DynamicObject>().is_some() {}
        }
        let _ = decoder.finish::<Pod>();
    }

    #[test]
    fn fuzz_list_stream_decoder_never_panics_and_ignores_chunking(bytes in jsonish(), cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let whole = list_items(std::slice::from_ref(&bytes));
        let split = list_items(&chunks(&bytes, &cuts));
        // Errors may name different offsets; success must give the same items.
        prop_assert_eq!(whole.is_ok(), split.is_ok());
        if let (Ok(a), Ok(b)) = (whole, split) {
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn fuzz_valid_lists_split_anywhere_give_their_items(values in proptest::collection::vec(any::<i64>(), 0..20), cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let items: Vec<serde_json::Value> = values.iter().map(|v| serde_json::json!({"metadata": {"name": v.to_string()}, "n": v})).collect();
        let body = serde_json::to_vec(&serde_json::json!({"kind": "List", "metadata": {"resourceVersion": "1"}, "items": items})).unwrap();
        let got = list_items(&chunks(&body, &cuts)).unwrap();
        let expected: Vec<Vec<u8>> = items.iter().map(|i| serde_json::to_vec(i).unwrap()).collect();
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn fuzz_object_decoding_and_item_edits_never_panic(bytes in jsonish()) {
        let _ = decode_object::<Pod>(&bytes, false);
        let _ = decode_object::<DynamicObject>(&bytes, true);
        let _ = peek_item_meta(&bytes);
        let stripped = strip_managed_fields(&bytes);
        // Stripping valid JSON keeps it valid.
        if serde_json::from_slice::<serde_json::Value>(&bytes).is_ok() {
            prop_assert!(serde_json::from_slice::<serde_json::Value>(&stripped).is_ok());
        }
    }

    #[test]
    fn fuzz_selectors_never_panic(text in "\\PC{0,80}", bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
        let _ = text.parse::<LabelSelector>();
        let _ = text.parse::<FieldSelector>();
        let lossy = String::from_utf8_lossy(&bytes);
        let _ = lossy.parse::<LabelSelector>();
        let _ = lossy.parse::<FieldSelector>();
    }

    #[test]
    fn fuzz_channel_frames_parse_or_fail_cleanly_and_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..64), channel in 0u8..255, port in any::<u16>()) {
        use crate::stream_protocol::{Frame, encode_frame, split_port_prefix};
        let _ = Frame::parse(&bytes);
        let _ = split_port_prefix(channel, &bytes);
        let message = encode_frame(channel, &bytes);
        prop_assert_eq!(Frame::parse(&message), Ok(Frame::Data { channel, data: &bytes[..] }));
        let mut first = port.to_le_bytes().to_vec();
        first.extend_from_slice(&bytes);
        prop_assert_eq!(split_port_prefix(channel, &first), Ok((port, &bytes[..])));
    }

    /// Arbitrary bytes after the magic, and mutations of a real Pod body: the codec, the
    /// direct decoder, the list splitter and the watch framing give errors, never panics.
    #[test]
    fn fuzz_protobuf_decoders_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in any::<usize>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        use crate::protobuf;
        let mut enveloped = protobuf::MAGIC.to_vec();
        enveloped.extend_from_slice(&bytes);
        let _ = protobuf::decode(&enveloped);
        let _ = protobuf::from_protobuf::<Pod>(&enveloped);
        let _ = protobuf::split_list(&enveloped);
        let _ = protobuf::peek_item_meta(&bytes);
        let _ = protobuf::decode_item("v1", "Pod", &bytes);
        let _ = protobuf::item_from_protobuf::<Pod>("v1", "Pod", &bytes, true);
        let _ = protobuf::decode_watch_event(&bytes);
        let _ = crate::WatchEvent::<Pod>::from_protobuf(&bytes, false);
        // A real Pod, with bytes changed and cut short.
        let mut pod = protobuf::encode(&serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}, "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}],
                     "volumes": [{"name": "v", "emptyDir": {}}]}})).unwrap();
        for (at, byte) in &flips {
            let len = pod.len();
            pod[at % len] = *byte;
        }
        pod.truncate(cut % (pod.len() + 1));
        let _ = protobuf::decode(&pod);
        let _ = protobuf::from_protobuf::<Pod>(&pod);
        // Watch framing, whatever the chunking.
        let mut frames = protobuf::WatchFrameDecoder::with_max_frame_bytes(1024);
        let mut body = (u32::try_from(bytes.len()).unwrap_or(0)).to_be_bytes().to_vec();
        body.extend_from_slice(&bytes);
        body.extend_from_slice(&pod);
        for piece in chunks(&body, &cuts) {
            frames.push(&piece);
            while let Some(event) = frames.next_frame() {
                if let Ok(frame) = event {
                    let _ = crate::WatchEvent::<Pod>::from_protobuf(frame, true);
                }
            }
        }
        let _ = frames.finish();
    }
}
