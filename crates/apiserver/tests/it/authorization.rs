//! `--authorization-mode RBAC` (issue 30): Roles, ClusterRoles (with aggregation),
//! RoleBindings and ClusterRoleBindings decide; refusals carry kube-apiserver's 403 texts
//! (checked against a real v1.20 run with `--authorization-mode=RBAC`); impersonation
//! needs the `impersonate` verb; access and rules reviews answer from the same rules;
//! `kubectl auth can-i --as` tells the truth.

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use kubeclient_apiserver::{ApiServer, AuthorizationMode};
use serde_json::{Value, json};

use crate::kubectl::Kubectl;
use crate::support::TestServer;

const BOT: &str = "system:serviceaccount:team:bot";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

async fn rbac_server() -> TestServer {
    let t =
        TestServer::start_with(ApiServer::builder().authorization_mode(AuthorizationMode::Rbac))
            .await;
    assert_eq!(
        t.post("/api/v1/namespaces", &json!({"metadata": {"name": "team"}}))
            .await
            .status,
        201
    );
    let account = t
        .post(
            "/api/v1/namespaces/team/serviceaccounts",
            &json!({"metadata": {"name": "bot"}}),
        )
        .await;
    assert_eq!(account.status, 201);
    t
}

/// Sends a request with extra headers (the test client is the server's administrator).
async fn send_with(
    t: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Value, String) {
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(format!("{}{path}", t.server.url()));
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
    {
        request = request.header("content-type", "application/json");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = request
        .body(Full::new(Bytes::from(body)))
        .expect("a request");
    let response = t.client.request(request).await.expect("an answer");
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or_default(),
        text,
    )
}

/// A request as `user` (impersonated by the administrator).
async fn as_user(
    t: &TestServer,
    user: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let (status, body, _) = send_with(t, method, path, &[("Impersonate-User", user)], body).await;
    (status, body)
}

async fn create(t: &TestServer, path: &str, object: Value) {
    let reply = t.post(path, &object).await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}

async fn bind_bot_to_role(t: &TestServer, role: Value) {
    create(t, &format!("{RBAC}/namespaces/team/roles"), role).await;
    create(
        t,
        &format!("{RBAC}/namespaces/team/rolebindings"),
        json!({"metadata": {"name": "rb"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
               "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]}),
    )
    .await;
}

fn reader_role() -> Value {
    json!({"metadata": {"name": "reader"},
           "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]}]})
}

#[tokio::test]
async fn rbac_refuses_what_no_binding_grants_with_kube_apiservers_403s() {
    let t = rbac_server().await;
    let (status, body) = as_user(&t, BOT, "GET", "/api/v1/namespaces/team/pods", None).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        format!(
            r#"pods is forbidden: User "{BOT}" cannot list resource "pods" in API group "" in the namespace "team""#
        )
    );
    assert_eq!(body["details"], json!({"kind": "pods"}));

    let (status, body) = as_user(&t, BOT, "DELETE", "/api/v1/namespaces/team/pods/web", None).await;
    assert_eq!(status, 403);
    assert_eq!(body["details"], json!({"name": "web", "kind": "pods"}));
    let (_, body) = as_user(&t, BOT, "GET", "/apis/nope.io/v1/things", None).await;
    assert_eq!(
        body["message"],
        format!(
            r#"things.nope.io is forbidden: User "{BOT}" cannot list resource "things" in API group "nope.io" at the cluster scope"#
        ),
        "refused before the resource is looked up, as kube-apiserver"
    );
    let (status, body) = as_user(&t, BOT, "GET", "/foo", None).await;
    assert_eq!(status, 403);
    assert_eq!(
        body["message"],
        format!(r#"forbidden: User "{BOT}" cannot get path "/foo""#)
    );

    // Discovery and the public paths stay open to every authenticated user.
    for path in [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps/v1",
        "/version",
        "/healthz",
    ] {
        let (status, body) = as_user(&t, BOT, "GET", path, None).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    // The administrator (system:masters) may do everything.
    assert_eq!(t.get("/api/v1/namespaces/team/pods").await.status, 200);
}

#[tokio::test]
async fn bindings_grant_their_roles_rules_where_they_are() {
    let t = rbac_server().await;
    bind_bot_to_role(&t, reader_role()).await;
    assert_eq!(
        as_user(&t, BOT, "GET", "/api/v1/namespaces/team/pods", None)
            .await
            .0,
        200
    );
    assert_eq!(
        as_user(
            &t,
            BOT,
            "GET",
            "/api/v1/namespaces/team/pods?watch=true&timeoutSeconds=1",
            None
        )
        .await
        .0,
        200
    );
    assert_eq!(
        as_user(&t, BOT, "GET", "/api/v1/namespaces/default/pods", None)
            .await
            .0,
        403,
        "only in team"
    );
    assert_eq!(
        as_user(&t, BOT, "GET", "/api/v1/pods", None).await.0,
        403,
        "not cluster-wide"
    );
    let pod =
        json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
    let (status, body) = as_user(&t, BOT, "POST", "/api/v1/namespaces/team/pods", Some(&pod)).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["message"],
        format!(
            r#"pods is forbidden: User "{BOT}" cannot create resource "pods" in API group "" in the namespace "team""#
        )
    );
    let (status, body) = as_user(
        &t,
        BOT,
        "GET",
        "/api/v1/namespaces/team/pods/web/exec?command=ls",
        None,
    )
    .await;
    assert_eq!(status, 403, "exec is `create` on pods/exec: {body}");
    assert_eq!(
        body["message"],
        format!(
            r#"pods "web" is forbidden: User "{BOT}" cannot create resource "pods/exec" in API group "" in the namespace "team""#
        )
    );

    // A ClusterRoleBinding to `view` reads Deployments everywhere, but not Secrets.
    create(
        &t,
        &format!("{RBAC}/clusterrolebindings"),
        json!({"metadata": {"name": "bot-view"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]}),
    )
    .await;
    assert_eq!(
        as_user(&t, BOT, "GET", "/apis/apps/v1/deployments", None)
            .await
            .0,
        200
    );
    assert_eq!(
        as_user(&t, BOT, "GET", "/api/v1/namespaces/default/secrets", None)
            .await
            .0,
        403
    );

    // A ClusterRole labelled to aggregate into `view` extends it at once.
    create(
        &t,
        &format!("{RBAC}/clusterroles"),
        json!({"metadata": {"name": "secret-reader", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
               "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]}),
    )
    .await;
    assert_eq!(
        as_user(&t, BOT, "GET", "/api/v1/namespaces/default/secrets", None)
            .await
            .0,
        200
    );

    // A binding to a role that does not exist grants nothing, and says so.
    create(
        &t,
        &format!("{RBAC}/namespaces/team/rolebindings"),
        json!({"metadata": {"name": "dangling"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "missing"},
               "subjects": [{"kind": "ServiceAccount", "name": "bot"}]}),
    )
    .await;
    let (status, body) = as_user(&t, BOT, "DELETE", "/api/v1/namespaces/team/pods/web", None).await;
    assert_eq!(status, 403);
    assert!(
        body["message"].as_str().is_some_and(|m| m.ends_with(
            r#"in the namespace "team": RBAC: role.rbac.authorization.k8s.io "missing" not found"#
        )),
        "{body}"
    );
}

/// A ClusterRole `name` with `rules`, bound to the bot cluster-wide.
async fn grant_bot(t: &TestServer, name: &str, rules: Value) {
    create(
        t,
        &format!("{RBAC}/clusterroles"),
        json!({"metadata": {"name": name}, "rules": rules}),
    )
    .await;
    create(
        t,
        &format!("{RBAC}/clusterrolebindings"),
        json!({"metadata": {"name": format!("bot-{name}")},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]}),
    )
    .await;
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    let t = rbac_server().await;
    let token = t
        .post(
            "/api/v1/namespaces/team/serviceaccounts/bot/token",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
        )
        .await
        .json()["status"]["token"]
        .as_str()
        .expect("a token")
        .to_owned();
    let bearer = format!("Bearer {token}");
    let (status, body, _) = send_with(
        &t,
        "GET",
        "/api/v1/namespaces/team/pods",
        &[("authorization", &bearer), ("Impersonate-User", "alice")],
        None,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["message"],
        format!(
            r#"users "alice" is forbidden: User "{BOT}" cannot impersonate resource "users" in API group "" at the cluster scope"#
        )
    );
    let (status, _, text) = send_with(
        &t,
        "GET",
        "/api/v1/namespaces/team/pods",
        &[("authorization", &bearer), ("Impersonate-Group", "g")],
        None,
    )
    .await;
    assert_eq!(status, 500);
    assert!(text.contains("without impersonating a user"), "{text}");

    // Granted `impersonate` on users, the token acts as alice (who may do nothing).
    grant_bot(
        &t,
        "impersonator",
        json!([{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["alice"]}]),
    )
    .await;
    let (status, body, _) = send_with(
        &t,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[("authorization", &bearer), ("Impersonate-User", "alice")],
        Some(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": "alice", "groups": ["system:authenticated"]})
    );
    let (status, body, _) = send_with(
        &t,
        "GET",
        "/api/v1/namespaces/team/pods",
        &[("authorization", &bearer), ("Impersonate-User", "alice")],
        None,
    )
    .await;
    assert_eq!(status, 403);
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains(r#"User "alice" cannot list"#)),
        "{body}"
    );
    let (status, _, _) = send_with(
        &t,
        "GET",
        "/api/v1/namespaces/team/pods",
        &[("authorization", &bearer), ("Impersonate-User", "mallory")],
        None,
    )
    .await;
    assert_eq!(status, 403, "resourceNames limits whom it may impersonate");

    // Extra values need `impersonate` on `userextras/<key>`, named by the value.
    let review_with_scope = |scope: &'static str| {
        let headers = [
            ("authorization", bearer.as_str()),
            ("Impersonate-User", "alice"),
            ("Impersonate-Extra-Acme.com%2Fscopes", scope),
        ];
        let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
        let t = &t;
        async move {
            send_with(
                t,
                "POST",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                &headers,
                Some(&review),
            )
            .await
        }
    };
    let (status, body, _) = review_with_scope("read").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["message"],
        format!(
            r#"userextras.authentication.k8s.io "read" is forbidden: User "{BOT}" cannot impersonate resource "userextras/acme.com/scopes" in API group "authentication.k8s.io" at the cluster scope"#
        )
    );
    grant_bot(
        &t,
        "scopes",
        json!([{"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/acme.com/scopes"],
                "verbs": ["impersonate"], "resourceNames": ["read"]}]),
    )
    .await;
    let (status, body, _) = review_with_scope("read").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": "alice", "groups": ["system:authenticated"],
               "extra": {"acme.com/scopes": ["read"]}})
    );
    let (status, _, _) = review_with_scope("write").await;
    assert_eq!(status, 403, "resourceNames limit the values");
}

#[tokio::test]
async fn access_and_rules_reviews_answer_from_the_bound_rules() {
    let t = rbac_server().await;
    bind_bot_to_role(&t, reader_role()).await;
    let sar = |verb: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": BOT, "groups": ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"],
                        "resourceAttributes": {"namespace": "team", "verb": verb, "resource": "pods"}}})
    };
    let allowed = t
        .post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &sar("list"),
        )
        .await
        .json();
    assert_eq!(
        allowed["status"],
        json!({"allowed": true, "reason": r#"RBAC: allowed by RoleBinding "rb/team" of Role "reader" to ServiceAccount "bot/team""#}),
        "the real server's reason"
    );
    let denied = t
        .post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &sar("delete"),
        )
        .await
        .json();
    assert_eq!(denied["status"], json!({"allowed": false}));

    let ssar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                      "spec": {"resourceAttributes": {"namespace": "team", "verb": "get", "resource": "pods", "subresource": "log"}}});
    let (status, body) = as_user(
        &t,
        BOT,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        Some(&ssar),
    )
    .await;
    assert_eq!(status, 201, "system:basic-user lets everyone ask: {body}");
    assert_eq!(body["status"]["allowed"], true);

    let ssrr = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "team"}});
    let (status, body) = as_user(
        &t,
        BOT,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        Some(&ssrr),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let resource_rules = body["status"]["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        resource_rules.contains(&json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods", "pods/log"]})),
        "{body}"
    );
    assert!(resource_rules.contains(&json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                                             "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})));
    assert!(
        body["status"]["nonResourceRules"]
            .as_array()
            .is_some_and(|rules| rules.iter().any(|r| r["nonResourceURLs"]
                .as_array()
                .is_some_and(|u| u.contains(&json!("/api/*"))))),
        "{body}"
    );
    assert_eq!(body["status"]["incomplete"], false);
}

#[tokio::test]
async fn always_allow_stays_the_default_and_impersonation_still_applies() {
    let t = TestServer::start().await;
    assert_eq!(
        as_user(&t, BOT, "GET", "/api/v1/namespaces/default/secrets", None)
            .await
            .0,
        200
    );
    let (status, body) = as_user(
        &t,
        BOT,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        body["status"]["userInfo"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ])
    );
}

#[tokio::test]
async fn kubectl_auth_can_i_as_a_service_account_tells_the_truth() {
    let t = rbac_server().await;
    let kubectl = Kubectl::for_server(&t);
    let can_i = |verb: &'static str| {
        let kubectl = &kubectl;
        async move {
            let output = kubectl
                .run(&["auth", "can-i", verb, "pods", "-n", "team", "--as", BOT])
                .await;
            String::from_utf8_lossy(&output.stdout).trim().to_owned()
        }
    };
    assert_eq!(can_i("list").await, "no");
    bind_bot_to_role(&t, reader_role()).await;
    assert_eq!(can_i("list").await, "yes");
    assert_eq!(can_i("delete").await, "no");
    let output = kubectl
        .run(&["get", "secrets", "-n", "team", "--as", BOT])
        .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            r#"Error from server (Forbidden): secrets is forbidden: User "{BOT}" cannot list resource "secrets" in API group "" in the namespace "team""#
        )),
        "{stderr}"
    );
    kubectl
        .ok(&["get", "pods", "-n", "team", "--as", BOT])
        .await;
}

/// A user who may write Roles may not grant what it does not hold (kube-apiserver's
/// escalation check), nor bind a role whose rules it lacks (the bind check), unless it
/// has the `escalate` or `bind` verb; the texts are a real v1.20's.
#[tokio::test]
async fn roles_and_bindings_grant_no_more_than_their_writer_holds() {
    let t = rbac_server().await;
    bind_bot_to_role(&t, reader_role()).await;
    create(
        &t,
        &format!("{RBAC}/namespaces/team/roles"),
        json!({"metadata": {"name": "rbac-writer"},
               "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
                          "verbs": ["create", "update", "patch", "get"]}]}),
    )
    .await;
    create(
        &t,
        &format!("{RBAC}/namespaces/team/rolebindings"),
        json!({"metadata": {"name": "rbw"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "rbac-writer"},
               "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]}),
    )
    .await;
    let roles = format!("{RBAC}/namespaces/team/roles");
    let sneaky = json!({"metadata": {"name": "sneaky"},
                        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]});
    let (status, body) = as_user(&t, BOT, "POST", &roles, Some(&sneaky)).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["message"],
        format!(
            "roles.rbac.authorization.k8s.io \"sneaky\" is forbidden: user \"{BOT}\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:team\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}}"
        )
    );
    let held = json!({"metadata": {"name": "ok"},
                      "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    assert_eq!(
        as_user(&t, BOT, "POST", &roles, Some(&held)).await.0,
        201,
        "rules it holds"
    );
    // A patch that widens the role is checked on the object it makes.
    let (status, _, _) = send_with(
        &t,
        "PATCH",
        &format!("{roles}/ok"),
        &[
            ("Impersonate-User", BOT),
            ("content-type", "application/merge-patch+json"),
        ],
        Some(&json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}]})),
    )
    .await;
    assert_eq!(status, 403, "a widening patch");

    let bindings = format!("{RBAC}/namespaces/team/rolebindings");
    let binding = |name: &str, kind: &str, role: &str| {
        json!({"metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
               "subjects": [{"kind": "User", "name": "bob"}]})
    };
    assert_eq!(
        as_user(
            &t,
            BOT,
            "POST",
            &bindings,
            Some(&binding("okb", "Role", "reader"))
        )
        .await
        .0,
        201,
        "a role whose rules it holds"
    );
    let (status, body) = as_user(
        &t,
        BOT,
        "POST",
        &bindings,
        Some(&binding("adminb", "ClusterRole", "admin")),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| m
            .starts_with(r#"rolebindings.rbac.authorization.k8s.io "adminb" is forbidden: user"#)),
        "{body}"
    );
    let (status, body) = as_user(
        &t,
        BOT,
        "POST",
        &bindings,
        Some(&binding("nob", "Role", "missing")),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(
        body["message"],
        r#"roles.rbac.authorization.k8s.io "missing" not found"#
    );

    // With `escalate` on roles and `bind` on ClusterRole admin, both go through.
    create(
        &t,
        &format!("{RBAC}/namespaces/team/roles"),
        json!({"metadata": {"name": "escalator"},
               "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]},
                         {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["admin"]}]}),
    )
    .await;
    create(
        &t,
        &format!("{RBAC}/namespaces/team/rolebindings"),
        json!({"metadata": {"name": "esc"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "escalator"},
               "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]}),
    )
    .await;
    assert_eq!(as_user(&t, BOT, "POST", &roles, Some(&sneaky)).await.0, 201);
    assert_eq!(
        as_user(
            &t,
            BOT,
            "POST",
            &bindings,
            Some(&binding("adminb", "ClusterRole", "admin"))
        )
        .await
        .0,
        201
    );
}

/// Polls `path` until `done` holds for its body (controllers run in the background).
async fn eventually(t: &TestServer, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let body = t.get(path).await.json();
        if done(&body) || std::time::Instant::now() > deadline {
            return body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_aggregation_controller_writes_the_rules_of_the_selected_cluster_roles() {
    let t = TestServer::start().await;
    let roles = format!("{RBAC}/clusterroles");
    let part = |name: &str, resource: &str| {
        json!({"metadata": {"name": name, "labels": {"example.com/aggregate-to-monitor": "true"}},
               "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["get", "list"]}]})
    };
    let rule = |resource: &str| json!({"apiGroups": [""], "resources": [resource], "verbs": ["get", "list"]});
    assert_eq!(
        t.post(
            &roles,
            &json!({"metadata": {"name": "monitor"},
                    "aggregationRule": {"clusterRoleSelectors": [
                        {"matchLabels": {"example.com/aggregate-to-monitor": "true"}}]}}),
        )
        .await
        .status,
        201
    );
    // Roles are gathered by name, each rule once.
    assert_eq!(
        t.post(&roles, &part("monitor-pods", "pods")).await.status,
        201
    );
    assert_eq!(
        t.post(&roles, &part("monitor-a-nodes", "nodes"))
            .await
            .status,
        201
    );
    assert_eq!(
        t.post(&roles, &part("monitor-b-pods", "pods")).await.status,
        201
    );
    let path = format!("{roles}/monitor");
    let want = json!([rule("nodes"), rule("pods")]);
    let body = eventually(&t, &path, |b| b["rules"] == want).await;
    assert_eq!(body["rules"], want, "{body}");

    // A selected role that goes takes its rules with it.
    assert_eq!(
        t.delete(&format!("{roles}/monitor-a-nodes")).await.status,
        200
    );
    let want = json!([rule("pods")]);
    let body = eventually(&t, &path, |b| b["rules"] == want).await;
    assert_eq!(body["rules"], want, "{body}");

    // The bootstrap's aggregated roles are filled in too, as on a real cluster: `view`
    // from `system:aggregate-to-view`, `edit` also from `view`, `admin` also from `edit`.
    let rules_of = |body: &Value| body["rules"].as_array().cloned().unwrap_or_default();
    let holds_all = |outer: &[Value], inner: &[Value]| inner.iter().all(|r| outer.contains(r));
    let view = eventually(&t, &format!("{roles}/view"), |b| !rules_of(b).is_empty()).await;
    let view = rules_of(&view);
    assert!(!view.is_empty());
    let edit = eventually(&t, &format!("{roles}/edit"), |b| {
        holds_all(&rules_of(b), &view)
    })
    .await;
    let edit = rules_of(&edit);
    assert!(
        holds_all(&edit, &view) && edit.len() > view.len(),
        "{edit:?}"
    );
    let admin = eventually(&t, &format!("{roles}/admin"), |b| {
        holds_all(&rules_of(b), &edit)
    })
    .await;
    let admin = rules_of(&admin);
    assert!(
        holds_all(&admin, &edit) && admin.len() > edit.len(),
        "{admin:?}"
    );
}
