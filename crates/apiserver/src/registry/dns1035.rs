//! The DNS-1035 label rule (apimachinery's `IsDNS1035Label`), in kube-apiserver's words:
//! CRD version names, review versions.

/// The DNS-1035 label rule, in kube-apiserver's words.
const DNS1035_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// Why `name` is not a DNS-1035 label, if it is not.
pub(crate) fn dns1035_problem(name: &str) -> Option<String> {
    if name.len() > 63 {
        return Some("must be no more than 63 characters".to_owned());
    }
    let bytes = name.as_bytes();
    let starts = bytes.first().is_some_and(u8::is_ascii_lowercase);
    let ends = bytes
        .last()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let inner = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    (!(starts && ends && inner)).then(|| DNS1035_MESSAGE.to_owned())
}
