//! Parsing and checking the `#[kubeclient(...)]` attributes.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{DeriveInput, Error, LitStr, Result};

const KEYS: &str = "group, version, kind, namespaced, plural, singular, shortname, category, status, printcolumn, scale, validation";
const RULE_REASONS: [&str; 4] = [
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
];
const COLUMN_TYPES: [&str; 5] = ["integer", "number", "string", "boolean", "date"];

/// One additional printer column (`kubectl get` shows it).
pub(crate) struct PrinterColumn {
    pub(crate) name: String,
    pub(crate) type_: String,
    pub(crate) json_path: String,
    pub(crate) description: Option<String>,
    pub(crate) format: Option<String>,
    pub(crate) priority: i32,
}

/// One CEL validation rule of the spec (`x-kubernetes-validations`).
pub(crate) struct ValidationRule {
    pub(crate) rule: String,
    pub(crate) message: Option<String>,
    pub(crate) message_expression: Option<String>,
    pub(crate) field_path: Option<String>,
    pub(crate) reason: Option<String>,
}

/// The scale subresource's paths.
pub(crate) struct Scale {
    pub(crate) spec_replicas_path: String,
    pub(crate) status_replicas_path: String,
    pub(crate) label_selector_path: Option<String>,
}

/// Everything the attributes say about the resource.
pub(crate) struct Resource {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    pub(crate) namespaced: bool,
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) status: Option<syn::Path>,
    pub(crate) printer_columns: Vec<PrinterColumn>,
    pub(crate) scale: Option<Scale>,
    pub(crate) validations: Vec<ValidationRule>,
}

/// Sets `slot` once; a second value is an error at `span`.
fn set_once<T>(slot: &mut Option<T>, value: T, key: &str, span: Span) -> Result<()> {
    if slot.is_some() {
        return Err(Error::new(span, format!("`{key}` is given twice")));
    }
    *slot = Some(value);
    Ok(())
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Kubernetes versions: `v1`, `v2beta1`, `v1alpha3` ...
fn is_kube_version(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('v') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return false;
    }
    let tail = &rest[digits..];
    if tail.is_empty() {
        return true;
    }
    let Some(n) = tail
        .strip_prefix("alpha")
        .or_else(|| tail.strip_prefix("beta"))
    else {
        return false;
    };
    !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit())
}

/// The default plural of a kind, as kubectl and kube-rs guess it (`Policy` -> `policies`).
fn plural_of(singular: &str) -> String {
    if singular.ends_with('s')
        || singular.ends_with('x')
        || singular.ends_with("ch")
        || singular.ends_with("sh")
    {
        format!("{singular}es")
    } else if let Some(stem) = singular.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{singular}s")
    }
}

/// The key of a nested attribute (`""` for paths that are not one identifier).
fn key_of(meta: &syn::meta::ParseNestedMeta<'_>) -> String {
    meta.path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default()
}

fn string(meta: &syn::meta::ParseNestedMeta<'_>) -> Result<LitStr> {
    meta.value()?.parse::<LitStr>()
}

fn parse_column(meta: &syn::meta::ParseNestedMeta<'_>) -> Result<PrinterColumn> {
    let (mut name, mut type_, mut json_path, mut description, mut format, mut priority) =
        (None, None, None, None, None, None);
    meta.parse_nested_meta(|inner| {
        let span = inner.path.span();
        let key = key_of(&inner);
        match key.as_str() {
            "name" => set_once(&mut name, string(&inner)?.value(), "name", span),
            "type" => {
                let lit = string(&inner)?;
                if !COLUMN_TYPES.contains(&lit.value().as_str()) {
                    return Err(Error::new(
                        lit.span(),
                        format!("printcolumn type must be one of {}", COLUMN_TYPES.join(", ")),
                    ));
                }
                set_once(&mut type_, lit.value(), "type", span)
            }
            "json_path" => {
                let lit = string(&inner)?;
                if !lit.value().starts_with('.') {
                    return Err(Error::new(
                        lit.span(),
                        "json_path must start with `.` (e.g. \".spec.replicas\")",
                    ));
                }
                set_once(&mut json_path, lit.value(), "json_path", span)
            }
            "description" => set_once(&mut description, string(&inner)?.value(), "description", span),
            "format" => set_once(&mut format, string(&inner)?.value(), "format", span),
            "priority" => {
                let lit = inner.value()?.parse::<syn::LitInt>()?;
                set_once(&mut priority, lit.base10_parse::<i32>()?, "priority", span)
            }
            _ => Err(Error::new(
                span,
                "unknown printcolumn key; expected name, type, json_path, description, format, priority",
            )),
        }
    })?;
    let span = meta.path.span();
    Ok(PrinterColumn {
        name: name.ok_or_else(|| Error::new(span, "printcolumn needs `name = \"...\"`"))?,
        type_: type_.ok_or_else(|| Error::new(span, "printcolumn needs `type = \"...\"`"))?,
        json_path: json_path
            .ok_or_else(|| Error::new(span, "printcolumn needs `json_path = \".spec...\"`"))?,
        description,
        format,
        priority: priority.unwrap_or(0),
    })
}

fn parse_scale(meta: &syn::meta::ParseNestedMeta<'_>) -> Result<Scale> {
    let (mut spec, mut status, mut selector) = (None, None, None);
    meta.parse_nested_meta(|inner| {
        let span = inner.path.span();
        let key = key_of(&inner);
        match key.as_str() {
            "spec_replicas_path" => set_once(&mut spec, string(&inner)?.value(), "spec_replicas_path", span),
            "status_replicas_path" => set_once(&mut status, string(&inner)?.value(), "status_replicas_path", span),
            "label_selector_path" => set_once(&mut selector, string(&inner)?.value(), "label_selector_path", span),
            _ => Err(Error::new(
                span,
                "unknown scale key; expected spec_replicas_path, status_replicas_path, label_selector_path",
            )),
        }
    })?;
    let span = meta.path.span();
    Ok(Scale {
        spec_replicas_path: spec.ok_or_else(|| {
            Error::new(
                span,
                "scale needs `spec_replicas_path = \".spec.replicas\"`",
            )
        })?,
        status_replicas_path: status.ok_or_else(|| {
            Error::new(
                span,
                "scale needs `status_replicas_path = \".status.replicas\"`",
            )
        })?,
        label_selector_path: selector,
    })
}

fn parse_validation(meta: &syn::meta::ParseNestedMeta<'_>) -> Result<ValidationRule> {
    let (mut rule, mut message, mut message_expression, mut field_path, mut reason) =
        (None, None, None, None, None);
    meta.parse_nested_meta(|inner| {
        let span = inner.path.span();
        let key = key_of(&inner);
        match key.as_str() {
            "rule" => {
                let lit = string(&inner)?;
                if lit.value().trim().is_empty() {
                    return Err(Error::new(lit.span(), "a validation rule cannot be empty"));
                }
                set_once(&mut rule, lit.value(), "rule", span)
            }
            "message" => {
                let lit = string(&inner)?;
                if lit.value().contains('\n') || lit.value().trim().is_empty() {
                    return Err(Error::new(
                        lit.span(),
                        "a validation message must be one non-empty line",
                    ));
                }
                set_once(&mut message, lit.value(), "message", span)
            }
            "message_expression" => set_once(
                &mut message_expression,
                string(&inner)?.value(),
                "message_expression",
                span,
            ),
            "field_path" => {
                let lit = string(&inner)?;
                if !lit.value().starts_with('.') {
                    return Err(Error::new(
                        lit.span(),
                        "field_path must start with `.` (e.g. \".replicas\", relative to the spec)",
                    ));
                }
                set_once(&mut field_path, lit.value(), "field_path", span)
            }
            "reason" => {
                let lit = string(&inner)?;
                if !RULE_REASONS.contains(&lit.value().as_str()) {
                    return Err(Error::new(
                        lit.span(),
                        format!("reason must be one of {}", RULE_REASONS.join(", ")),
                    ));
                }
                set_once(&mut reason, lit.value(), "reason", span)
            }
            _ => Err(Error::new(
                span,
                "unknown validation key; expected rule, message, message_expression, field_path, reason",
            )),
        }
    })?;
    let span = meta.path.span();
    Ok(ValidationRule {
        rule: rule.ok_or_else(|| {
            Error::new(
                span,
                "validation needs `rule = \"...\"` (CEL, with `self` the spec)",
            )
        })?,
        message,
        message_expression,
        field_path,
        reason,
    })
}

impl Resource {
    pub(crate) fn from_input(input: &DeriveInput) -> Result<Self> {
        match &input.data {
            syn::Data::Struct(data) if matches!(data.fields, syn::Fields::Named(_)) => {}
            _ => {
                return Err(Error::new(
                    input.ident.span(),
                    "#[derive(CustomResource)] goes on the spec: a struct with named fields",
                ));
            }
        }
        if !input.generics.params.is_empty() {
            return Err(Error::new(
                input.generics.span(),
                "#[derive(CustomResource)] does not support generic spec structs",
            ));
        }
        let (mut group, mut version, mut kind, mut plural, mut singular, mut status) =
            (None, None, None, None, None, None);
        let mut scale = None;
        let mut namespaced = false;
        let (mut short_names, mut categories, mut printer_columns) =
            (Vec::new(), Vec::new(), Vec::new());
        let mut validations = Vec::new();
        let mut seen_attribute = false;
        for attr in input
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("kubeclient"))
        {
            seen_attribute = true;
            attr.parse_nested_meta(|meta| {
                let span = meta.path.span();
                let key = key_of(&meta);
                match key.as_str() {
                    "group" => {
                        let lit = string(&meta)?;
                        let value = lit.value();
                        if !value.contains('.') || !value.split('.').all(is_dns_label) {
                            return Err(Error::new(
                                lit.span(),
                                "group must be a DNS subdomain with at least one dot, e.g. \"example.com\"",
                            ));
                        }
                        set_once(&mut group, value, "group", span)
                    }
                    "version" => {
                        let lit = string(&meta)?;
                        if !is_kube_version(&lit.value()) {
                            return Err(Error::new(
                                lit.span(),
                                "version must look like v1, v2beta1 or v1alpha1",
                            ));
                        }
                        set_once(&mut version, lit.value(), "version", span)
                    }
                    "kind" => {
                        let lit = string(&meta)?;
                        let value = lit.value();
                        if !value.starts_with(|c: char| c.is_ascii_uppercase())
                            || !value.chars().all(|c| c.is_ascii_alphanumeric())
                        {
                            return Err(Error::new(
                                lit.span(),
                                "kind must be an UpperCamelCase name, e.g. \"Installation\"",
                            ));
                        }
                        set_once(&mut kind, value, "kind", span)
                    }
                    "namespaced" => {
                        if namespaced {
                            return Err(Error::new(span, "`namespaced` is given twice"));
                        }
                        namespaced = true;
                        Ok(())
                    }
                    "plural" | "singular" | "shortname" | "category" => {
                        let lit = string(&meta)?;
                        if !is_dns_label(&lit.value()) {
                            return Err(Error::new(
                                lit.span(),
                                format!("{key} must be lowercase letters, digits and dashes"),
                            ));
                        }
                        match key.as_str() {
                            "plural" => set_once(&mut plural, lit.value(), "plural", span),
                            "singular" => set_once(&mut singular, lit.value(), "singular", span),
                            "shortname" => {
                                short_names.push(lit.value());
                                Ok(())
                            }
                            _ => {
                                categories.push(lit.value());
                                Ok(())
                            }
                        }
                    }
                    "status" => {
                        let lit = string(&meta)?;
                        let path = lit.parse::<syn::Path>().map_err(|_| {
                            Error::new(lit.span(), "status must name a type, e.g. \"InstallationStatus\"")
                        })?;
                        set_once(&mut status, path, "status", span)
                    }
                    "printcolumn" => {
                        printer_columns.push(parse_column(&meta)?);
                        Ok(())
                    }
                    "scale" => {
                        let parsed = parse_scale(&meta)?;
                        set_once(&mut scale, parsed, "scale", span)
                    }
                    "validation" => {
                        validations.push(parse_validation(&meta)?);
                        Ok(())
                    }
                    _ => Err(Error::new(
                        span,
                        format!("unknown attribute `{}`; expected one of {KEYS}", quote::ToTokens::to_token_stream(&meta.path)),
                    )),
                }
            })?;
        }
        let missing = |key: &str, example: &str| {
            Error::new(
                input.ident.span(),
                if seen_attribute {
                    format!("missing `{key} = {example}` in #[kubeclient(...)]")
                } else {
                    format!(
                        "#[derive(CustomResource)] needs #[kubeclient(group = ..., version = ..., kind = ...)]; `{key}` is missing"
                    )
                },
            )
        };
        let group = group.ok_or_else(|| missing("group", "\"example.com\""))?;
        let version = version.ok_or_else(|| missing("version", "\"v1\""))?;
        let kind = kind.ok_or_else(|| missing("kind", "\"MyKind\""))?;
        if input.ident == kind {
            return Err(Error::new(
                input.ident.span(),
                format!(
                    "the spec struct cannot be named like the kind it generates; name it `{kind}Spec`"
                ),
            ));
        }
        if scale.is_some() && status.is_none() {
            return Err(Error::new(
                input.ident.span(),
                "the scale subresource needs a status (`status = \"...\"`)",
            ));
        }
        let singular = singular.unwrap_or_else(|| kind.to_ascii_lowercase());
        let plural = plural.unwrap_or_else(|| plural_of(&singular));
        Ok(Resource {
            group,
            version,
            kind,
            namespaced,
            plural,
            singular,
            short_names,
            categories,
            status,
            printer_columns,
            scale,
            validations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_english_rules_for_common_kinds() {
        assert_eq!(plural_of("installation"), "installations");
        assert_eq!(plural_of("policy"), "policies");
        assert_eq!(plural_of("gateway"), "gateways");
        assert_eq!(plural_of("ingress"), "ingresses");
        assert_eq!(plural_of("box"), "boxes");
    }

    #[test]
    fn versions_follow_kubernetes_rules() {
        for good in ["v1", "v2beta1", "v1alpha3", "v10"] {
            assert!(is_kube_version(good), "{good}");
        }
        for bad in ["1", "v", "v0", "v1beta", "v1gamma1", "V1", "v1beta01"] {
            assert!(!is_kube_version(bad), "{bad}");
        }
    }
}
