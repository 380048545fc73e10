//! Expand request JSON: parse, validate, and the parsed request's JSON round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessiondex_query::ExpandRequest;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(req) = ExpandRequest::from_json(&v) else {
        return;
    };
    let json = serde_json::to_value(&req).expect("a request serializes");
    let again = ExpandRequest::from_json(&json).expect("a serialized request parses");
    assert_eq!(again, req);
    let _ = req.validate();
});
