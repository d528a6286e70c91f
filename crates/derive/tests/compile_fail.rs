//! `#[derive(CustomResource)]` refuses bad attributes with a clear message at the
//! attribute (trybuild compares the compiler's output with `ui/*.stderr`).

#[test]
fn bad_attributes_fail_to_compile_with_clear_messages() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
