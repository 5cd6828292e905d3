//! A static file server for the built playground, on 127.0.0.1 only.
//!
//! The playground is plain static files, so anything that serves files
//! works; this one exists so that `cargo xtask play` and the browser tests
//! need nothing else. It serves `GET`/`HEAD` for files under one directory,
//! with the content types browsers insist on (`application/wasm` for
//! streaming compilation, JavaScript for workers).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};

/// Binds 127.0.0.1:`port` (0: any free port) and serves `root` from a
/// background thread for as long as the process lives.
pub fn start(root: &Path, port: u16) -> Result<SocketAddr, String> {
    let listener =
        TcpListener::bind(("127.0.0.1", port)).map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || {
                // A client that hangs up mid-request is not our problem.
                let _ = serve(&root, stream);
            });
        }
    });
    Ok(addr)
}

fn serve(root: &Path, stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        // Skip the headers: nothing in them changes the answer.
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
                break;
            }
        }
        let mut parts = request_line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
        let mut out = &stream;
        if method != "GET" && method != "HEAD" {
            respond(&mut out, "405 Method Not Allowed", "text/plain", b"only GET and HEAD\n", true)?;
            continue;
        }
        match resolve(root, target).and_then(|path| std::fs::read(&path).ok().map(|body| (path, body))) {
            Some((path, body)) => respond(&mut out, "200 OK", content_type(&path), &body, method == "GET")?,
            None => respond(&mut out, "404 Not Found", "text/plain", b"not found\n", method == "GET")?,
        }
    }
}

/// The file a request path names, refusing anything outside `root`.
fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next().unwrap_or("/");
    let mut file = root.to_path_buf();
    for part in Path::new(path.trim_start_matches('/')).components() {
        match part {
            Component::Normal(name) => file.push(name),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if file.is_dir() {
        file.push("index.html");
    }
    file.is_file().then_some(file)
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "yaml" => "text/yaml; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        _ => "application/octet-stream",
    }
}

fn respond(out: &mut impl Write, status: &str, kind: &str, body: &[u8], with_body: bool) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\n\r\n",
        body.len()
    )?;
    if with_body {
        out.write_all(body)?;
    }
    out.flush()
}
