//! The apply configurations `#[derive(CustomResource)]` generates: `<Spec>ApplyConfiguration`
//! (every spec field optional, serialized only when set, with a `with_<field>` builder) and
//! `<Kind>ApplyConfiguration` (identity, metadata, spec, status) implementing kubeclient's
//! `ApplyConfiguration`, as client-go's applyconfiguration-gen does for custom types.
//! A spec field's own type is kept whole: a nested struct is set as a whole value.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::punctuated::Punctuated;
use syn::{DeriveInput, Meta, Token};

use crate::attrs::Resource;

/// The serde items kept on the configuration's container and fields: the ones that decide
/// JSON names and shape (`default`, `skip_serializing_if`, `with` ... would fight `Option`).
const KEPT_CONTAINER_ITEMS: &[&str] = &["rename_all"];
const KEPT_FIELD_ITEMS: &[&str] = &["rename", "alias", "flatten", "skip"];

fn kept_serde(attrs: &[syn::Attribute], kept: &[&str]) -> syn::Result<Vec<Meta>> {
    let mut items = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let metas = attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)?;
        items.extend(
            metas
                .into_iter()
                .filter(|meta| kept.iter().any(|name| meta.path().is_ident(name))),
        );
    }
    Ok(items)
}

/// `T` of `Option<T>`, else the type itself.
fn without_option(ty: &syn::Type) -> &syn::Type {
    if let syn::Type::Path(path) = ty
        && path.qself.is_none()
        && let Some(last) = path.path.segments.last()
        && last.ident == "Option"
        && let syn::PathArguments::AngleBracketed(args) = &last.arguments
        && args.args.len() == 1
        && let Some(syn::GenericArgument::Type(inner)) = args.args.first()
    {
        return inner;
    }
    ty
}

pub(crate) fn expand(input: &DeriveInput, resource: &Resource) -> syn::Result<TokenStream> {
    let syn::Data::Struct(data) = &input.data else {
        return Ok(TokenStream::new());
    };
    let spec = &input.ident;
    let vis = &input.vis;
    let kind_ident = format_ident!("{}", resource.kind);
    let spec_ac = format_ident!("{}ApplyConfiguration", spec);
    let kind_ac = format_ident!("{}ApplyConfiguration", resource.kind);
    let private = quote!(::kubeclient::__private);
    let ac = quote!(::kubeclient::applyconfigurations);
    let meta_ac = quote!(#ac::meta::v1::ObjectMetaApplyConfiguration);
    let serde_crate = "::kubeclient::__private::serde";
    let api_version = format!("{}/{}", resource.group, resource.version);
    let kind = &resource.kind;

    let container_serde = kept_serde(&input.attrs, KEPT_CONTAINER_ITEMS)?;
    let container_serde =
        (!container_serde.is_empty()).then(|| quote!(#[serde(#(#container_serde),*)]));
    let mut fields = Vec::new();
    let mut setters = Vec::new();
    for field in &data.fields {
        let Some(ident) = &field.ident else { continue };
        let field_vis = &field.vis;
        let inner = without_option(&field.ty);
        let docs = field.attrs.iter().filter(|a| a.path().is_ident("doc"));
        let serde_items = kept_serde(&field.attrs, KEPT_FIELD_ITEMS)?;
        fields.push(quote! {
            #(#docs)*
            #[serde(#(#serde_items,)* skip_serializing_if = "::core::option::Option::is_none")]
            #field_vis #ident: ::core::option::Option<#inner>,
        });
        let setter = format_ident!("with_{}", ident.to_string().trim_start_matches("r#"));
        let doc = format!("Sets `{ident}`.");
        setters.push(quote! {
            #[doc = #doc]
            pub fn #setter(mut self, value: impl ::core::convert::Into<#inner>) -> Self {
                self.#ident = ::core::option::Option::Some(value.into());
                self
            }
        });
    }

    let (status_field, status_setter) = match &resource.status {
        Some(status) => (
            quote! {
                /// The observed state, applied through the status subresource.
                #[serde(skip_serializing_if = "::core::option::Option::is_none")]
                pub status: ::core::option::Option<#status>,
            },
            quote! {
                /// Sets the status (applied as a whole value, through
                /// `Api::apply_configuration_status`).
                pub fn with_status(mut self, status: #status) -> Self {
                    self.status = ::core::option::Option::Some(status);
                    self
                }
            },
        ),
        None => (quote!(), quote!()),
    };
    let constructor = if resource.namespaced {
        quote! {
            /// A configuration of the object `name` in `namespace`.
            pub fn new(name: impl ::core::convert::Into<::std::string::String>, namespace: impl ::core::convert::Into<::std::string::String>) -> Self {
                <Self as #ac::ApplyConfiguration>::identity(&name.into(), ::core::option::Option::Some(&namespace.into()))
            }
        }
    } else {
        quote! {
            /// A configuration of the object `name`.
            pub fn new(name: impl ::core::convert::Into<::std::string::String>) -> Self {
                <Self as #ac::ApplyConfiguration>::identity(&name.into(), ::core::option::Option::None)
            }
        }
    };
    let spec_doc = format!(
        "The apply configuration of [`{spec}`] (generated by `#[derive(CustomResource)]`): every field optional, only what is set is serialized."
    );
    let kind_doc = format!(
        "The apply configuration of the `{api_version}` `{kind}` custom resource [`{kind_ident}`] (generated by `#[derive(CustomResource)]`); send it with `Api::apply_configuration`."
    );

    Ok(quote! {
        #[doc = #spec_doc]
        #[derive(Clone, Debug, Default, #private::serde::Serialize, #private::serde::Deserialize)]
        #[serde(crate = #serde_crate)]
        #container_serde
        #[must_use]
        #vis struct #spec_ac {
            #(#fields)*
        }

        impl #spec_ac {
            #(#setters)*
        }

        #[doc = #kind_doc]
        #[derive(Clone, Debug, Default, #private::serde::Serialize, #private::serde::Deserialize)]
        #[serde(crate = #serde_crate)]
        #[must_use]
        #vis struct #kind_ac {
            /// `apiVersion`, set by the constructor.
            #[serde(rename = "apiVersion", skip_serializing_if = "::core::option::Option::is_none")]
            pub api_version: ::core::option::Option<::std::string::String>,
            /// `kind`, set by the constructor.
            #[serde(skip_serializing_if = "::core::option::Option::is_none")]
            pub kind: ::core::option::Option<::std::string::String>,
            /// The metadata to apply.
            #[serde(skip_serializing_if = "::core::option::Option::is_none")]
            pub metadata: ::core::option::Option<#meta_ac>,
            /// The spec fields to apply.
            #[serde(skip_serializing_if = "::core::option::Option::is_none")]
            pub spec: ::core::option::Option<#spec_ac>,
            #status_field
        }

        impl #kind_ac {
            #constructor

            /// Sets the spec fields to apply.
            pub fn with_spec(mut self, spec: #spec_ac) -> Self {
                self.spec = ::core::option::Option::Some(spec);
                self
            }

            #status_setter

            /// Adds labels to `metadata.labels`.
            pub fn with_labels<K: ::core::convert::Into<::std::string::String>, V: ::core::convert::Into<::std::string::String>>(
                mut self,
                entries: impl ::core::iter::IntoIterator<Item = (K, V)>,
            ) -> Self {
                self.metadata = ::core::option::Option::Some(self.metadata.take().unwrap_or_default().with_labels(entries));
                self
            }
        }

        impl #ac::FieldMarkers for #kind_ac {}

        impl #ac::ApplyConfiguration for #kind_ac {
            type Object = #kind_ident;

            fn identity(name: &str, namespace: ::core::option::Option<&str>) -> Self {
                let mut metadata = <#meta_ac as ::core::default::Default>::default().with_name(name);
                metadata.namespace = namespace.map(::std::borrow::ToOwned::to_owned);
                #kind_ac {
                    api_version: ::core::option::Option::Some(::std::borrow::ToOwned::to_owned(#api_version)),
                    kind: ::core::option::Option::Some(::std::borrow::ToOwned::to_owned(#kind)),
                    metadata: ::core::option::Option::Some(metadata),
                    ..::core::default::Default::default()
                }
            }

            fn metadata(&self) -> ::core::option::Option<&#meta_ac> {
                self.metadata.as_ref()
            }
        }
    })
}
