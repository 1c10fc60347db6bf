//! Link arguments for the unit tests' binary (`make rust-test`).
//!
//! Every build of this crate uses the wheel's toolchain: zig links against glibc 2.17's
//! symbol versions (the Makefile says why). The unit tests link libpython too, which the
//! machine's own glibc built, and lld refuses an executable whose shared libraries need
//! symbols newer than the glibc it links against. At run time the machine's glibc is the
//! one loaded, and it has them all, so the tests' binary is linked allowing them. The
//! extension itself (a shared library) is linked as before; no dependency is rebuilt.
fn main() {
    // (lld allows it in shared libraries, the extension, already)
    println!("cargo:rustc-link-arg=-Wl,--allow-shlib-undefined");
}
