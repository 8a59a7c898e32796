//! Cross-site request protection for every state-changing request (POST and the like).
//!
//! Three checks, in this order:
//!
//! 1. **Fetch metadata.** A browser names where a request comes from in
//!    `Sec-Fetch-Site`, a header page scripts cannot set. `same-origin` and `none`
//!    (typed by the user) pass; `same-site` and `cross-site` are refused with 403.
//! 2. **Origin.** Without `Sec-Fetch-Site` (older browsers), an `Origin` header must
//!    name this server: one of `--public-origin`, or, when none is configured, the
//!    request's `Host` (or `X-Forwarded-Host`, only with `--trust-forwarded-host`).
//!    `Origin: null` (sandboxed frames, some redirects) is refused.
//! 3. **Form token** (the HTML forms only: `/`, `/feedback`, `/plan`, `/memory`). A random token in
//!    the `oomdoc_csrf` cookie (`SameSite=Lax; HttpOnly`) must equal the form's hidden
//!    `csrf` field (double submit). A page from another site can neither read the cookie
//!    nor make the browser send it on a cross-site POST.
//!
//! A request with neither `Sec-Fetch-Site` nor `Origin` is not from a browser page
//! (curl, scripts, CI): the API (`/api/v1/...`) answers it as before; the HTML form
//! endpoints still want their token.

use crate::{error::AppError, routes::Shared};
use axum::{
    extract::{Request, State},
    http::{header, HeaderMap, HeaderValue, Method},
    middleware::Next,
    response::{IntoResponse, Response},
};
use maud::{html, Markup};

/// Name of the cookie and of the hidden form field.
pub const COOKIE: &str = "oomdoc_csrf";
pub const FIELD: &str = "csrf";
/// Token length in hex digits (128 random bits).
const TOKEN_HEX: usize = 32;

/// Who may post to this server (`oomdoc serve --public-origin`, `--trust-forwarded-host`).
#[derive(Debug, Clone, Default)]
pub struct OriginPolicy {
    /// Origins the pages are served from, e.g. `https://oomdoc.example.internal`
    /// (normalized by [`parse_origin`]). Empty: the request's own host.
    pub public_origins: Vec<String>,
    /// Believe the proxy's `X-Forwarded-Host` (and `X-Forwarded-Proto` for the cookie's
    /// `Secure` flag). Only behind a proxy that sets them itself.
    pub trust_forwarded_host: bool,
    /// Host names this server answers to besides the loopback names and the public
    /// origins' hosts (`--allowed-host`; [`crate::host`]).
    pub allowed_hosts: Vec<String>,
}

/// `scheme://host[:port]`, lowercased, without a default port or trailing slash; an
/// error for anything else (a path, a query, user info, another scheme).
pub fn parse_origin(s: &str) -> Result<String, String> {
    let bad = || format!("`{s}` is not an origin: write it as https://host or https://host:port, without a path");
    let lower = s.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, rest) = lower.split_once("://").ok_or_else(bad)?;
    if scheme != "http" && scheme != "https" {
        return Err(bad());
    }
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return Err(bad());
    }
    let (host, port) = split_authority(rest).ok_or_else(bad)?;
    if host.is_empty() {
        return Err(bad());
    }
    let default = if scheme == "https" { 443 } else { 80 };
    Ok(match port {
        Some(p) if p != default => format!("{scheme}://{host}:{p}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// `host[:port]` → (host, port); IPv6 literals keep their brackets.
fn split_authority(a: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if a.starts_with('[') {
        let end = a.find(']')?;
        let after = &a[end + 1..];
        match after.strip_prefix(':') {
            Some(p) => (&a[..=end], Some(p)),
            None if after.is_empty() => (&a[..=end], None),
            None => return None,
        }
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    Some((host, port))
}

fn header_str<'a>(headers: &'a HeaderMap, name: impl axum::http::header::AsHeaderName) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

const PROXY_HINT: &str = "behind a reverse proxy that changes the host name, start oomdoc serve with \
                          --public-origin https://your.host (or --trust-forwarded-host); see docs/serve.md";

/// Checks 1 and 2: `Err` holds the message of the 403.
pub fn check_origin(policy: &OriginPolicy, headers: &HeaderMap) -> Result<(), String> {
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().unwrap_or("?").trim().to_ascii_lowercase();
        return match site.as_str() {
            "same-origin" | "none" => Ok(()),
            _ => Err(format!(
                "cross-site request refused (Sec-Fetch-Site: {site}): this server accepts posts only from its own \
                 pages, or from programs such as curl that send no browser headers"
            )),
        };
    }
    let Some(origin) = header_str(headers, header::ORIGIN) else {
        return Ok(()); // not a browser page: curl, scripts
    };
    let refused = |why: &str| {
        Err(format!(
            "cross-site request refused: Origin `{origin}` {why}; {PROXY_HINT}"
        ))
    };
    if origin.eq_ignore_ascii_case("null") {
        return refused("is opaque");
    }
    let Ok(origin_n) = parse_origin(origin) else {
        return refused("is malformed");
    };
    if !policy.public_origins.is_empty() {
        if policy.public_origins.iter().any(|o| *o == origin_n) {
            return Ok(());
        }
        return refused(&format!(
            "is not this server's public origin ({})",
            policy.public_origins.join(", ")
        ));
    }
    let forwarded = policy
        .trust_forwarded_host
        .then(|| {
            header_str(headers, "x-forwarded-host")
                .and_then(|v| v.split(',').next())
                .map(str::trim)
        })
        .flatten();
    let Some(host) = forwarded.or_else(|| header_str(headers, header::HOST)) else {
        return refused("cannot be compared: the request has no Host");
    };
    // The scheme seen by the browser may differ from ours (TLS at the proxy): compare the
    // host and port, the port defaulting to the Origin's scheme's.
    let scheme = origin_n.split("://").next().unwrap_or("http");
    match parse_origin(&format!("{scheme}://{host}")) {
        Ok(ours) if ours == origin_n => Ok(()),
        _ => refused(&format!("does not match the host `{host}`")),
    }
}

/// A token from the request's cookie, if it has a well-formed one.
pub fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| v.len() == TOKEN_HEX && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn new_token() -> String {
    let mut b = [0u8; TOKEN_HEX / 2];
    if getrandom::fill(&mut b).is_err() {
        // No OS randomness (should not happen): std's per-process random hasher keys.
        use std::hash::{BuildHasher, Hasher};
        for chunk in b.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_nanos(),
            );
            chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
        }
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Compare without an early exit (the token is a secret).
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Check 3, for the HTML form handlers: the form's `csrf` field must equal the cookie.
pub fn verify_form(headers: &HeaderMap, field: Option<&str>) -> Result<(), AppError> {
    let Some(cookie) = cookie_token(headers) else {
        return Err(AppError::Forbidden(format!(
            "this form needs the `{COOKIE}` cookie, which protects it from cross-site posts: allow cookies \
             for this site, reload the page and send again (programs use the API: POST /api/v1/diagnose, \
             /api/v1/feedback, /api/v1/plan, /api/v1/memory)"
        )));
    };
    match field.map(str::trim) {
        Some(f) if same(f, &cookie) => Ok(()),
        _ => Err(AppError::Forbidden(
            "the form's anti-forgery token is missing or out of date: reload the page and send again".into(),
        )),
    }
}

tokio::task_local! {
    /// The token of the request being answered, for [`hidden_field`].
    static FORM_TOKEN: String;
}

/// The hidden `csrf` input every POST form carries (empty outside a request).
pub fn hidden_field() -> Markup {
    let token = FORM_TOKEN.try_with(Clone::clone).unwrap_or_default();
    html! { input type="hidden" name=(FIELD) value=(token); }
}

fn is_safe(m: &Method) -> bool {
    matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE)
}

/// The middleware: checks 1 and 2 on unsafe methods; provides the form token to the
/// page being rendered and sets the cookie on HTML answers when the browser has none.
pub async fn guard(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let policy = &state.config.origin_policy;
    if !is_safe(req.method()) {
        if let Err(msg) = check_origin(policy, req.headers()) {
            return AppError::Forbidden(msg).into_response();
        }
    }
    let existing = cookie_token(req.headers());
    let token = existing.clone().unwrap_or_else(new_token);
    let secure = policy.public_origins.iter().any(|o| o.starts_with("https://"))
        || (policy.trust_forwarded_host
            && header_str(req.headers(), "x-forwarded-proto").is_some_and(|p| p.eq_ignore_ascii_case("https")));
    let mut resp = FORM_TOKEN.scope(token.clone(), next.run(req)).await;
    let is_html = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/html"));
    if existing.is_none() && is_html {
        // Lax, not Strict: a page reached from a link on another site still gets the
        // cookie the browser already has, so forms open in other tabs stay valid. Lax
        // cookies are not sent on cross-site POSTs, which is what matters here.
        let cookie = format!(
            "{COOKIE}={token}; Path=/; SameSite=Lax; HttpOnly{}",
            if secure { "; Secure" } else { "" }
        );
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn origins_normalize() {
        assert_eq!(
            parse_origin("HTTPS://Oomdoc.Example:443/").unwrap(),
            "https://oomdoc.example"
        );
        assert_eq!(parse_origin("http://127.0.0.1:8080").unwrap(), "http://127.0.0.1:8080");
        assert_eq!(parse_origin("http://[::1]:8080").unwrap(), "http://[::1]:8080");
        for bad in [
            "oomdoc.example",
            "ftp://x",
            "https://x/path",
            "https://u@x",
            "https://x:99999",
            "https://",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fetch_metadata_then_origin() {
        let p = OriginPolicy::default();
        assert!(check_origin(&p, &headers(&[])).is_ok(), "curl: no browser headers");
        assert!(check_origin(
            &p,
            &headers(&[("sec-fetch-site", "same-origin"), ("origin", "https://evil")])
        )
        .is_ok());
        assert!(check_origin(&p, &headers(&[("sec-fetch-site", "cross-site")])).is_err());
        assert!(check_origin(&p, &headers(&[("sec-fetch-site", "same-site")])).is_err());
        let host = [("host", "127.0.0.1:8080")];
        assert!(check_origin(&p, &headers(&[host[0], ("origin", "http://127.0.0.1:8080")])).is_ok());
        assert!(check_origin(&p, &headers(&[host[0], ("origin", "http://127.0.0.1:8081")])).is_err());
        assert!(check_origin(&p, &headers(&[host[0], ("origin", "null")])).is_err());
        // TLS at the proxy: the browser's https origin on the default port, Host without a port.
        assert!(check_origin(
            &p,
            &headers(&[("host", "oomdoc.example"), ("origin", "https://oomdoc.example")])
        )
        .is_ok());
        // X-Forwarded-Host only when trusted.
        let fwd = headers(&[
            ("host", "127.0.0.1:8080"),
            ("x-forwarded-host", "oomdoc.example"),
            ("origin", "https://oomdoc.example"),
        ]);
        assert!(check_origin(&p, &fwd).is_err());
        assert!(check_origin(
            &OriginPolicy {
                trust_forwarded_host: true,
                ..Default::default()
            },
            &fwd
        )
        .is_ok());
        let public = OriginPolicy {
            public_origins: vec!["https://oomdoc.example".into()],
            ..Default::default()
        };
        assert!(check_origin(&public, &fwd).is_ok());
        assert!(check_origin(&public, &headers(&[host[0], ("origin", "http://127.0.0.1:8080")])).is_err());
    }

    #[test]
    fn form_token_must_match_the_cookie() {
        let t = new_token();
        assert_eq!(t.len(), TOKEN_HEX);
        assert_ne!(t, new_token());
        let h = headers(&[("cookie", &format!("a=b; {COOKIE}={t}"))]);
        assert_eq!(cookie_token(&h).as_deref(), Some(t.as_str()));
        assert!(verify_form(&h, Some(&t)).is_ok());
        assert!(verify_form(&h, Some(&new_token())).is_err());
        assert!(verify_form(&h, None).is_err());
        assert!(verify_form(&headers(&[]), Some(&t)).is_err());
    }
}
