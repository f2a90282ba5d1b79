//! Loopback hygiene: which `Host` headers the server answers.
//!
//! A server bound to loopback is still reachable from a web browser on the same machine
//! through DNS rebinding (a page on `evil.example` whose name is made to resolve to
//! 127.0.0.1). Such requests carry the attacker's host name in `Host`, so unless remote
//! access is allowed ([`ServerConfig::allow_remote`](crate::ServerConfig::allow_remote)) only
//! loopback host names are answered: `localhost` (and `*.localhost`), `127.0.0.0/8` and
//! `[::1]`. A request without `Host` (HTTP/1.0) is answered.

use std::net::IpAddr;

use crate::status::ApiError;

/// True if `host` (a `Host` header value, with or without port) names the loopback interface.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        // [v6]:port
        match rest.split_once(']') {
            Some((ip, _)) => ip,
            None => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(h, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                host
            }
        })
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// 403 `Forbidden` for a non-loopback `Host`.
///
/// # Errors
/// 403 when `host` is present and not loopback.
pub(crate) fn check(host: Option<&str>) -> Result<(), ApiError> {
    match host {
        Some(h) if !is_loopback_host(h) => Err(ApiError::new(
            403,
            "Forbidden",
            format!(
                "host {h:?} is not allowed: this server answers loopback host names only (start it with --allow-remote to answer others)"
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_addresses_pass_others_do_not() {
        for ok in [
            "127.0.0.1:6443",
            "127.0.0.1",
            "127.1.2.3:1",
            "localhost",
            "LOCALHOST:80",
            "kinformer.localhost:8080",
            "[::1]:6443",
            "[::1]",
            "localhost.",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:6443",
            "10.0.0.1:6443",
            "[::2]:1",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "[::1",
            "",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
        assert!(check(None).is_ok());
        assert_eq!(check(Some("evil.example")).unwrap_err().code, 403);
    }
}
