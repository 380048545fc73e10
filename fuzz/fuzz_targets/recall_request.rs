//! Recall request JSON: parse, validate, and the validated request's JSON round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessiondex_query::RecallRequest;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(req) = RecallRequest::from_json(&v) else {
        return;
    };
    // A parsed request serializes back to JSON that parses to the same request.
    let json = serde_json::to_value(&req).expect("a request serializes");
    let again = RecallRequest::from_json(&json).expect("a serialized request parses");
    assert_eq!(again, req);
    let _ = req.validate();
});
