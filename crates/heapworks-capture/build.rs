//! Compiles the shim's one C file: per-thread state in initial-exec TLS, which stable Rust
//! cannot request (a Rust `thread_local!` in a cdylib uses the general-dynamic model).
fn main() {
    println!("cargo:rerun-if-changed=src/thread_state.c");
    cc::Build::new()
        .file("src/thread_state.c")
        .flag_if_supported("-ftls-model=initial-exec")
        .compile("heapworks_capture_tls");
}
