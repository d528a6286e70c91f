//! The Kubernetes CEL libraries for URLs, IP addresses and CIDRs
//! (`k8s.io/apiserver/pkg/cel/library/{urls,ip,cidr}.go`), as opaque CEL values.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, ResolveResult, Value};

use super::cel_args::{no_overload, string_arg, string_map};

/// A parsed URL (`url('https://example.com/a?b=c')`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Url {
    scheme: String,
    host: String,
    path: String,
    query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

/// An IP address (`ip('10.0.0.1')`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ip(IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}

/// A CIDR (`cidr('10.0.0.0/8')`): an address and a prefix length.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cidr {
    ip: IpAddr,
    prefix: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        "net.CIDR"
    }
}

/// Registers the functions on a rule context.
pub(crate) fn register(context: &mut Context<'static, 'static>) {
    let _ = context.add_function("url", url);
    let _ = context.add_function("isURL", is_url);
    let _ = context.add_function("getScheme", get_scheme);
    let _ = context.add_function("getHost", get_host);
    let _ = context.add_function("getHostname", get_hostname);
    let _ = context.add_function("getPort", get_port);
    let _ = context.add_function("getEscapedPath", get_escaped_path);
    let _ = context.add_function("getQuery", get_query);
    let _ = context.add_function("ip", ip);
    let _ = context.add_function("isIP", is_ip);
    let _ = context.add_function("ip.isCanonical", |v: Value| -> ResolveResult {
        let text = string_arg("ip.isCanonical", &v)?;
        let ip = parse_ip(text).ok_or_else(|| {
            ExecutionError::function_error(
                "ip.isCanonical",
                format!("IP Address {text:?} parse error during conversion from string"),
            )
        })?;
        Ok(Value::Bool(ip.to_string() == text))
    });
    let _ = context.add_function("family", family);
    let _ = context.add_function("isUnspecified", |This(v): This<Value>| {
        ip_test("isUnspecified", &v, |ip| ip.is_unspecified())
    });
    let _ = context.add_function("isLoopback", |This(v): This<Value>| {
        ip_test("isLoopback", &v, |ip| ip.is_loopback())
    });
    let _ = context.add_function("isLinkLocalMulticast", |This(v): This<Value>| {
        ip_test("isLinkLocalMulticast", &v, |ip| match ip {
            IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
            IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
        })
    });
    let _ = context.add_function("isLinkLocalUnicast", |This(v): This<Value>| {
        ip_test("isLinkLocalUnicast", &v, |ip| match ip {
            IpAddr::V4(a) => a.is_link_local(),
            IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
        })
    });
    let _ = context.add_function("isGlobalUnicast", |This(v): This<Value>| {
        ip_test("isGlobalUnicast", &v, is_global_unicast)
    });
    let _ = context.add_function("cidr", cidr);
    let _ = context.add_function("isCIDR", is_cidr);
    let _ = context.add_function("containsIP", contains_ip);
    let _ = context.add_function("containsCIDR", contains_cidr);
    let _ = context.add_function("prefixLength", prefix_length);
    let _ = context.add_function("masked", masked);
}

fn opaque<T: 'static>(value: &Value) -> Option<&T> {
    match value {
        Value::Opaque(o) => o.downcast_ref::<T>(),
        _ => None,
    }
}

pub(super) fn parse_url(text: &str) -> Option<Url> {
    if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (before_fragment, _) = text.split_once('#').unwrap_or((text, ""));
    let (before_query, query) = before_fragment
        .split_once('?')
        .unwrap_or((before_fragment, ""));
    if before_query.starts_with('/') {
        return Some(Url {
            scheme: String::new(),
            host: String::new(),
            path: before_query.to_owned(),
            query: query.to_owned(),
        });
    }
    let (scheme, rest) = before_query.split_once(':')?;
    let mut chars = scheme.chars();
    if !chars.next()?.is_ascii_alphabetic()
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let (host, path) = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let cut = authority_and_path
                .find('/')
                .unwrap_or(authority_and_path.len());
            let authority = &authority_and_path[..cut];
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            (host.to_owned(), authority_and_path[cut..].to_owned())
        }
        None => (String::new(), rest.to_owned()),
    };
    Some(Url {
        scheme: scheme.to_owned(),
        host,
        path,
        query: query.to_owned(),
    })
}

fn url(value: Value) -> ResolveResult {
    let text = string_arg("url", &value)?;
    parse_url(text)
        .map(|u| Value::Opaque(Arc::new(u)))
        .ok_or_else(|| {
            ExecutionError::function_error(
                "url",
                format!("URL parse error during conversion from string: {text}"),
            )
        })
}

fn is_url(value: Value) -> ResolveResult {
    Ok(Value::Bool(
        parse_url(string_arg("isURL", &value)?).is_some(),
    ))
}

fn url_part(function: &str, value: &Value, part: impl Fn(&Url) -> Value) -> ResolveResult {
    opaque::<Url>(value)
        .map(part)
        .ok_or_else(|| no_overload(function, &[value]))
}

/// Host and port of a URL's host part (`[::1]:80` is `::1` and `80`).
fn split_host(host: &str) -> (&str, &str) {
    if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest.split_once(']').unwrap_or((rest, ""));
        return (name, after.strip_prefix(':').unwrap_or(""));
    }
    host.rsplit_once(':').unwrap_or((host, ""))
}

fn get_scheme(This(v): This<Value>) -> ResolveResult {
    url_part("getScheme", &v, |u| Value::from(u.scheme.clone()))
}

fn get_host(This(v): This<Value>) -> ResolveResult {
    url_part("getHost", &v, |u| Value::from(u.host.clone()))
}

fn get_hostname(This(v): This<Value>) -> ResolveResult {
    url_part("getHostname", &v, |u| {
        Value::from(split_host(&u.host).0.to_owned())
    })
}

fn get_port(This(v): This<Value>) -> ResolveResult {
    url_part("getPort", &v, |u| {
        Value::from(split_host(&u.host).1.to_owned())
    })
}

fn get_escaped_path(This(v): This<Value>) -> ResolveResult {
    url_part("getEscapedPath", &v, |u| Value::from(u.path.clone()))
}

fn get_query(This(v): This<Value>) -> ResolveResult {
    url_part("getQuery", &v, |u| {
        let mut entries: Vec<(String, Vec<Value>)> = Vec::new();
        for pair in u.query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            };
            let (key, value) = (decode(key), Value::from(decode(value)));
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some((_, values)) => values.push(value),
                None => entries.push((key, vec![value])),
            }
        }
        string_map(
            entries
                .into_iter()
                .map(|(k, v)| (k, Value::List(Arc::new(v)))),
        )
    })
}

/// An address as Kubernetes' `ip()` accepts it: no zone, and no IPv4-mapped IPv6 form.
fn parse_ip(text: &str) -> Option<IpAddr> {
    let ip: IpAddr = text.parse().ok()?;
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return None;
    }
    Some(ip)
}

fn ip(This(value): This<Value>) -> ResolveResult {
    match &value {
        Value::String(text) => parse_ip(text)
            .map(|ip| Value::Opaque(Arc::new(Ip(ip))))
            .ok_or_else(|| {
                ExecutionError::function_error(
                    "ip",
                    format!("IP Address {text:?} parse error during conversion from string"),
                )
            }),
        // `cidr.ip()`: the CIDR's address.
        other => match opaque::<Cidr>(other) {
            Some(c) => Ok(Value::Opaque(Arc::new(Ip(c.ip)))),
            None => Err(no_overload("ip", &[other])),
        },
    }
}

fn is_ip(value: Value) -> ResolveResult {
    Ok(Value::Bool(parse_ip(string_arg("isIP", &value)?).is_some()))
}

fn ip_test(function: &str, value: &Value, test: impl Fn(&IpAddr) -> bool) -> ResolveResult {
    opaque::<Ip>(value)
        .map(|ip| Value::Bool(test(&ip.0)))
        .ok_or_else(|| no_overload(function, &[value]))
}

fn is_global_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            !(a.is_unspecified()
                || a.is_loopback()
                || a.is_link_local()
                || a.is_multicast()
                || a.is_broadcast())
        }
        IpAddr::V6(a) => {
            !(a.is_unspecified()
                || a.is_loopback()
                || a.is_multicast()
                || a.segments()[0] & 0xffc0 == 0xfe80)
        }
    }
}

fn family(This(v): This<Value>) -> ResolveResult {
    let ip = match (opaque::<Ip>(&v), opaque::<Cidr>(&v)) {
        (Some(ip), _) => ip.0,
        (_, Some(c)) => c.ip,
        _ => return Err(no_overload("family", &[&v])),
    };
    Ok(Value::Int(if ip.is_ipv4() { 4 } else { 6 }))
}

fn parse_cidr(text: &str) -> Option<Cidr> {
    let (address, prefix) = text.split_once('/')?;
    let ip = parse_ip(address)?;
    if prefix.is_empty() || (prefix.len() > 1 && prefix.starts_with('0')) {
        return None;
    }
    let prefix: u8 = prefix.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (prefix <= max).then_some(Cidr { ip, prefix })
}

fn cidr(value: Value) -> ResolveResult {
    let text = string_arg("cidr", &value)?;
    parse_cidr(text)
        .map(|c| Value::Opaque(Arc::new(c)))
        .ok_or_else(|| {
            ExecutionError::function_error(
                "cidr",
                format!("network address {text:?} parse error during conversion from string"),
            )
        })
}

fn is_cidr(value: Value) -> ResolveResult {
    Ok(Value::Bool(
        parse_cidr(string_arg("isCIDR", &value)?).is_some(),
    ))
}

/// The address with all bits past `prefix` cleared.
fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let bits = u32::from(a);
            let kept = if prefix == 0 {
                0
            } else {
                bits & (u32::MAX << (32 - u32::from(prefix)))
            };
            IpAddr::V4(Ipv4Addr::from(kept))
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a);
            let kept = if prefix == 0 {
                0
            } else {
                bits & (u128::MAX << (128 - u32::from(prefix)))
            };
            IpAddr::V6(Ipv6Addr::from(kept))
        }
    }
}

fn contains(network: &Cidr, ip: IpAddr, prefix: u8) -> bool {
    network.ip.is_ipv4() == ip.is_ipv4()
        && prefix >= network.prefix
        && mask(ip, network.prefix) == mask(network.ip, network.prefix)
}

fn contains_ip(This(v): This<Value>, other: Value) -> ResolveResult {
    let network = opaque::<Cidr>(&v).ok_or_else(|| no_overload("containsIP", &[&v, &other]))?;
    let ip = match &other {
        Value::String(text) => parse_ip(text).ok_or_else(|| {
            ExecutionError::function_error(
                "containsIP",
                format!("IP Address {text:?} parse error during conversion from string"),
            )
        })?,
        value => opaque::<Ip>(value)
            .map(|ip| ip.0)
            .ok_or_else(|| no_overload("containsIP", &[&v, &other]))?,
    };
    let full = if ip.is_ipv4() { 32 } else { 128 };
    Ok(Value::Bool(contains(network, ip, full)))
}

fn contains_cidr(This(v): This<Value>, other: Value) -> ResolveResult {
    let network = opaque::<Cidr>(&v).ok_or_else(|| no_overload("containsCIDR", &[&v, &other]))?;
    let inner = match &other {
        Value::String(text) => parse_cidr(text).ok_or_else(|| {
            ExecutionError::function_error(
                "containsCIDR",
                format!("network address {text:?} parse error during conversion from string"),
            )
        })?,
        value => opaque::<Cidr>(value)
            .cloned()
            .ok_or_else(|| no_overload("containsCIDR", &[&v, &other]))?,
    };
    Ok(Value::Bool(contains(network, inner.ip, inner.prefix)))
}

fn prefix_length(This(v): This<Value>) -> ResolveResult {
    opaque::<Cidr>(&v)
        .map(|c| Value::Int(i64::from(c.prefix)))
        .ok_or_else(|| no_overload("prefixLength", &[&v]))
}

fn masked(This(v): This<Value>) -> ResolveResult {
    opaque::<Cidr>(&v)
        .map(|c| {
            Value::Opaque(Arc::new(Cidr {
                ip: mask(c.ip, c.prefix),
                prefix: c.prefix,
            }))
        })
        .ok_or_else(|| no_overload("masked", &[&v]))
}

#[cfg(test)]
mod tests {
    use super::super::cel_library::{context, environment};
    use cel::Value;

    fn eval(source: &str) -> Result<Value, cel::ExecutionError> {
        environment().compile(source).unwrap().execute(&context())
    }

    #[test]
    fn urls_ips_and_cidrs() {
        for rule in [
            "isURL('https://example.com:8443/a/b?x=1&x=2') && !isURL('example com')",
            "url('https://example.com:8443/a?x=1&x=2').getHost() == 'example.com:8443'",
            "url('https://[::1]:80/').getHostname() == '::1' && url('https://[::1]:80/').getPort() == '80'",
            "url('https://example.com/a/b').getEscapedPath() == '/a/b'",
            "url('https://example.com/?x=1&x=2').getQuery() == {'x': ['1', '2']}",
            "url('https://example.com').getScheme() == 'https'",
            "isIP('10.0.0.1') && !isIP('10.0.0.300') && !isIP('::ffff:1.2.3.4')",
            "ip('10.0.0.1').family() == 4 && ip('::1').family() == 6 && ip('127.0.0.1').isLoopback()",
            "ip('10.0.0.1') == ip('10.0.0.1') && ip('8.8.8.8').isGlobalUnicast()",
            "isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0/33')",
            "ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')",
            "cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))",
            "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')",
            "cidr('10.0.0.0/8').prefixLength() == 8 && cidr('10.0.0.0/8').ip() == ip('10.0.0.0')",
        ] {
            assert_eq!(eval(rule), Ok(Value::Bool(true)), "{rule}");
        }
        assert!(eval("ip('nope') == ip('nope')").is_err());
    }
}
