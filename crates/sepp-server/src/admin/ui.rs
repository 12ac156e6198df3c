//! The web UI bundle (`admin-ui/dist`), embedded at compile time and served under `/admin/`.
//!
//! An asset that exists is served with its MIME type: files under `assets/` (hashed names) are
//! cached for a year, everything else must be revalidated. A missing file under `assets/` is a
//! 404; any other path serves `index.html`, so the single-page app's own routes load it. A path
//! with a `..` segment, a backslash or an encoded dot or slash is refused before any lookup.
//! None of this needs credentials: the shell and its assets hold no data.

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use include_dir::{Dir, include_dir};

use crate::admin::errors::AdminError;

static DIST: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../admin-ui/dist");

const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const NO_CACHE: &str = "no-cache";

/// The MIME type of a file, by extension.
fn mime_of(path: &str) -> &'static str {
    let extension = path.rsplit_once('.').map_or("", |(_, extension)| extension);
    match extension.to_ascii_lowercase().as_str() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "txt" => "text/plain; charset=utf-8",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

/// Whether a request path tries to leave the bundle.
fn is_traversal(path: &str) -> bool {
    let lowered = path.to_ascii_lowercase();
    path.split('/').any(|segment| segment == ".." || segment == ".")
        || path.contains('\\')
        || path.contains('\0')
        || lowered.contains("%2e")
        || lowered.contains("%2f")
        || lowered.contains("%5c")
}

fn file_response(path: &str, contents: &'static [u8], cache: &'static str) -> Response {
    let mut response = contents.into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(mime_of(path)));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

fn index() -> Response {
    match DIST.get_file("index.html") {
        Some(file) => file_response("index.html", file.contents(), NO_CACHE),
        None => AdminError::not_found("not found").into_response(),
    }
}

/// `GET /admin` and `GET /admin/`.
pub async fn shell() -> Response {
    index()
}

/// `GET /admin/{*path}` (API paths are routed before this).
pub async fn asset(Path(path): Path<String>) -> Response {
    if is_traversal(&path) {
        return AdminError::new(StatusCode::BAD_REQUEST, "invalid_argument", "invalid path").into_response();
    }
    if let Some(file) = DIST.get_file(&path) {
        let cache = if path.starts_with("assets/") { IMMUTABLE } else { NO_CACHE };
        return file_response(&path, file.contents(), cache);
    }
    if path.starts_with("assets/") {
        return AdminError::not_found("not found").into_response();
    }
    index()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_in_any_spelling_is_recognised() {
        for path in ["../etc/passwd", "assets/../../x", "a/./b", "..%2fetc", "%2E%2E/x", "a\\b", "a%5cb"] {
            assert!(is_traversal(path), "{path}");
        }
        for path in ["assets/index-abc.js", "queues/emails/jobs", "favicon.ico", "a..b"] {
            assert!(!is_traversal(path), "{path}");
        }
    }

    #[test]
    fn the_bundle_has_its_shell_and_types_are_known() {
        assert!(DIST.get_file("index.html").is_some());
        assert_eq!(mime_of("assets/index-x.JS"), "text/javascript; charset=utf-8");
        assert_eq!(mime_of("README"), "application/octet-stream");
    }
}
