#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kinformer_fuzz::list_body(data));
