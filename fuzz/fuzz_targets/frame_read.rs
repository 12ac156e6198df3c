//! Fuzzes what recovery reads from disk: `frame::read` over a whole file's bytes, and
//! `codec::decode` over the same bytes. Neither may panic, and whatever they accept must encode
//! back to bytes that decode to the same thing (compared as bytes, since a NaN custom value is
//! not equal to itself).

#![no_main]

use libfuzzer_sys::fuzz_target;
use sepp_log::codec;
use sepp_log::frame::{self, Read};

fuzz_target!(|data: &[u8]| {
    // Walk the bytes frame by frame, as segment replay does.
    let mut at = 0;
    // Without a source, payloads stay in memory, so re-encoding needs nothing but the records.
    let mut placements = Vec::new();
    while let Read::Frame(records, used) = frame::read(&data[at..], None) {
        assert!(used >= frame::HEADER_BYTES && used <= data.len() - at);
        let mut encoded = Vec::new();
        frame::encode(&records, &mut encoded, &mut placements);
        let Read::Frame(again, again_used) = frame::read(&encoded, None) else {
            panic!("a re-encoded frame does not read back");
        };
        assert_eq!(again_used, encoded.len());
        let mut encoded_again = Vec::new();
        frame::encode(&again, &mut encoded_again, &mut placements);
        assert_eq!(encoded, encoded_again);
        at += used;
    }

    if let Ok((record, used)) = codec::decode(data, None) {
        assert!(used <= data.len());
        let mut encoded = Vec::new();
        codec::encode(&record, &mut encoded, &mut placements);
        let (again, again_used) = codec::decode(&encoded, None).expect("a re-encoded record decodes");
        assert_eq!(again_used, encoded.len());
        let mut encoded_again = Vec::new();
        codec::encode(&again, &mut encoded_again, &mut placements);
        assert_eq!(encoded, encoded_again);
    }
});
