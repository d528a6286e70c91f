//! `fieldValidation`: Strict, Warn and Ignore for unknown and duplicate fields of built-in
//! kinds, with kube-apiserver's messages and `Warning` headers.

use crate::support::TestServer;

#[tokio::test]
async fn field_validation_directives_drop_warn_or_refuse_unknown_and_duplicate_fields() {
    let t = TestServer::start().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let body = r#"{"metadata":{"name":"a","bogus":1},"data":{"k":"v"},"extra":true}"#;
    let ignored = t
        .request(
            "POST",
            &format!("{cms}?fieldValidation=Ignore"),
            Some("application/json"),
            body,
        )
        .await;
    assert_eq!(ignored.status, 201);
    assert!(ignored.header("warning").is_none());
    let stored = t.get(&format!("{cms}/a")).await.json();
    assert!(
        stored.get("extra").is_none() && stored["metadata"].get("bogus").is_none(),
        "{stored}"
    );

    let warned = t
        .request("PUT", &format!("{cms}/a"), Some("application/json"), body)
        .await;
    assert_eq!(
        warned.status,
        200,
        "{}",
        String::from_utf8_lossy(&warned.body)
    );
    let warnings: Vec<&str> = warned
        .headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert_eq!(
        warnings,
        // In field-name order (the server holds objects as sorted maps).
        [
            r#"299 - "unknown field \"extra\"""#,
            r#"299 - "unknown field \"metadata.bogus\"""#,
        ]
    );

    let duplicated = r#"{"metadata":{"name":"b"},"data":{"k":"1","k":"2"}}"#;
    let strict = t
        .request(
            "POST",
            &format!("{cms}?fieldValidation=Strict"),
            Some("application/json"),
            duplicated,
        )
        .await;
    assert_eq!(strict.status, 400);
    assert_eq!(
        strict.json()["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.k""#
    );
    let patch = t
        .request(
            "PATCH",
            &format!("{cms}/a?fieldValidation=Strict"),
            Some("application/merge-patch+json"),
            r#"{"nope":1}"#,
        )
        .await;
    assert_eq!(patch.status, 400);
    assert_eq!(
        patch.json()["message"],
        r#"strict decoding error: unknown field "nope""#
    );
    let bad = t
        .request(
            "POST",
            &format!("{cms}?fieldValidation=Loose"),
            Some("application/json"),
            body,
        )
        .await;
    assert_eq!(bad.status, 422);
}
