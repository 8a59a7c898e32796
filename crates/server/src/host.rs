//! The `Host` check against DNS rebinding.
//!
//! A page on `attacker.example` can have its name re-pointed at 127.0.0.1 after it
//! loaded; the browser then sends the page's requests to a loopback `oomdoc serve` as
//! same-origin requests (`Sec-Fetch-Site: same-origin`, `Origin` of the attacker's
//! name), which pass the cross-site checks of [`crate::csrf`]. What the browser cannot
//! change is `Host`: it names the attacker's host. So every request's host name must be
//! one this server answers to:
//!
//! - bound to a loopback address: `localhost` (and `*.localhost`), `127.0.0.1` and the
//!   other loopback addresses, `[::1]`;
//! - the host of each `--public-origin`, and each `--allowed-host`;
//! - bound to another address with neither flag given: any host (a server on the network
//!   is reached by names it cannot know; `--allowed-host` restricts it);
//! - with `--trust-forwarded-host`: any host. The operator says a reverse proxy fronts
//!   the server and sets the names; `X-Forwarded-Host` is never what is checked (a page
//!   can send that header itself).
//!
//! The port is not compared (a proxy may change it). Refused requests get 403.

use crate::{error::AppError, routes::Shared};
use axum::{
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
};
use std::net::{IpAddr, SocketAddr};

/// `host[:port]` → the host, lowercased, IPv6 without brackets; None when malformed.
pub fn host_name(authority: &str) -> Option<String> {
    let a = authority.trim().to_ascii_lowercase();
    let host = if let Some(rest) = a.strip_prefix('[') {
        rest.split_once(']')?.0.to_string()
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h.to_string(),
            Some(_) => return None,
            None => a,
        }
    };
    let host = host.trim_end_matches('.').to_string();
    (!host.is_empty()).then_some(host)
}

fn is_loopback_name(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether a request naming `host` (from its `Host` header, already through
/// [`host_name`]) is for this server.
pub fn allowed(host: &str, bound: SocketAddr, public_origins: &[String], allowed_hosts: &[String]) -> bool {
    let configured = || {
        allowed_hosts.iter().filter_map(|h| host_name(h)).chain(public_origins.iter().filter_map(|o| o.split_once("://").and_then(|(_, a)| host_name(a))))
    };
    if configured().any(|h| h == host) {
        return true;
    }
    if bound.ip().is_loopback() {
        return is_loopback_name(host);
    }
    // On the network: any name unless told which; the address itself always.
    let told = !allowed_hosts.is_empty() || !public_origins.is_empty();
    !told || host.parse::<IpAddr>().is_ok_and(|ip| ip == bound.ip() || ip.is_loopback()) || is_loopback_name(host)
}

/// Middleware: 403 for a request whose `Host` is not this server's (see the module doc).
pub async fn guard(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let policy = &state.config.origin_policy;
    if policy.trust_forwarded_host {
        return next.run(req).await;
    }
    let Some(header) = req.headers().get(axum::http::header::HOST) else {
        // HTTP/1.0 without Host: not a browser.
        return next.run(req).await;
    };
    let shown = String::from_utf8_lossy(header.as_bytes()).chars().take(100).collect::<String>();
    let ok = header
        .to_str()
        .ok()
        .and_then(host_name)
        .is_some_and(|h| allowed(&h, state.config.addr, &policy.public_origins, &policy.allowed_hosts));
    if ok {
        return next.run(req).await;
    }
    AppError::Forbidden(format!(
        "this server does not answer to the host `{}` (a page that re-pointed its name at this address?); \
         if you reach it by that name, start oomdoc serve with --allowed-host {}",
        oomdoc_units::terminal::escape(&shown),
        oomdoc_units::terminal::escape(&host_name(&shown).unwrap_or_default())
    ))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lo() -> SocketAddr {
        "127.0.0.1:8080".parse().unwrap()
    }

    #[test]
    fn host_names() {
        assert_eq!(host_name("LocalHost:8080").as_deref(), Some("localhost"));
        assert_eq!(host_name("[::1]:80").as_deref(), Some("::1"));
        assert_eq!(host_name("example.com.").as_deref(), Some("example.com"));
        assert_eq!(host_name("a:b:c"), None);
        assert_eq!(host_name(""), None);
    }

    #[test]
    fn loopback_server_answers_loopback_names_only() {
        for h in ["localhost", "127.0.0.1", "127.0.0.2", "::1", "app.localhost"] {
            assert!(allowed(h, lo(), &[], &[]), "{h}");
        }
        for h in ["attacker.example", "localhost.attacker.example", "10.0.0.1"] {
            assert!(!allowed(h, lo(), &[], &[]), "{h}");
        }
        // Even with --public-origin, only its host is added.
        let origins = vec!["https://oomdoc.example.internal".to_string()];
        assert!(allowed("oomdoc.example.internal", lo(), &origins, &[]));
        assert!(!allowed("attacker.example", lo(), &origins, &[]));
        assert!(allowed("devbox", lo(), &[], &["devbox".to_string()]));
    }

    #[test]
    fn network_server_answers_any_name_until_told() {
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(allowed("whatever.example", any, &[], &[]));
        let named = vec!["oomdoc.corp".to_string()];
        assert!(allowed("oomdoc.corp", any, &[], &named));
        assert!(!allowed("attacker.example", any, &[], &named));
        assert!(allowed("localhost", any, &[], &named));
    }
}
