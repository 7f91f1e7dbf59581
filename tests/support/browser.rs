//! Headless Chromium (Debian's `chromium`) driven over the DevTools protocol, for the tests
//! of the static report pages: start it on 127.0.0.1, attach to its page, evaluate script and
//! collect exceptions and console errors.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Guards against a hung browser; not a timed assertion.
const PATIENCE: Duration = Duration::from_secs(60);

/// The Chromium binary (`CHROMIUM`, else `chromium` on PATH); a failure naming the package.
pub fn chromium() -> PathBuf {
    let name = std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into());
    super::need::program(&name, "Debian's chromium package")
}

/// A DevTools connection: commands answered by id, events kept for later checks.
pub struct Cdp {
    ws: WebSocketStream<TcpStream>,
    next: u64,
    /// Events received so far.
    pub events: Vec<Value>,
    session: Option<String>,
}

impl Cdp {
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = &self.session {
            message["sessionId"] = json!(session);
        }
        self.ws
            .send(Message::text(message.to_string()))
            .await
            .unwrap();
        loop {
            let value = self.receive().await;
            if value["id"] == id {
                assert!(value.get("error").is_none(), "{method}: {value}");
                return value["result"].clone();
            }
            self.events.push(value);
        }
    }

    async fn receive(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(PATIENCE, self.ws.next())
                .await
                .expect("chromium answers")
                .expect("the DevTools socket stays open")
                .unwrap();
            if let Message::Text(text) = message {
                return serde_json::from_str(text.as_str()).unwrap();
            }
        }
    }

    pub async fn wait_event(&mut self, method: &str) {
        if self.events.iter().any(|e| e["method"] == method) {
            return;
        }
        loop {
            let value = self.receive().await;
            let found = value["method"] == method;
            self.events.push(value);
            if found {
                return;
            }
        }
    }

    /// A left click with real mouse events at `spot`'s `x` and `y` (page coordinates).
    pub async fn click(&mut self, spot: &Value) {
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                serde_json::json!({"type": kind, "x": spot["x"], "y": spot["y"], "button": "left", "clickCount": 1}),
            )
            .await;
        }
    }

    pub async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Exceptions and console or log errors seen so far.
    pub fn errors(&self) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| {
                e["method"] == "Runtime.exceptionThrown"
                    || (e["method"] == "Runtime.consoleAPICalled" && e["params"]["type"] == "error")
                    || (e["method"] == "Log.entryAdded" && e["params"]["entry"]["level"] == "error")
            })
            .collect()
    }
}

/// Starts Chromium and attaches to its blank page.
pub async fn open_browser(binary: &Path, profile: &Path) -> (tokio::process::Child, Cdp) {
    let mut child = tokio::process::Command::new(binary)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("chromium starts");
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                return url.trim().to_owned();
            }
        }
        panic!("chromium exited without a DevTools URL");
    })
    .await
    .expect("chromium prints its DevTools URL");
    // Keep reading so a chatty browser never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    let address = url
        .strip_prefix("ws://")
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    assert!(address.starts_with("127.0.0.1:"), "{url}");
    let stream = TcpStream::connect(&address).await.unwrap();
    let (ws, _) = tokio_tungstenite::client_async(url.as_str(), stream)
        .await
        .unwrap();
    let mut cdp = Cdp {
        ws,
        next: 0,
        events: Vec::new(),
        session: None,
    };
    let targets = cdp.call("Target.getTargets", json!({})).await;
    let page = targets["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "page")
        .expect("a page target")["targetId"]
        .clone();
    let attached = cdp
        .call(
            "Target.attachToTarget",
            json!({"targetId": page, "flatten": true}),
        )
        .await;
    cdp.session = attached["sessionId"].as_str().map(ToOwned::to_owned);
    for method in ["Runtime.enable", "Log.enable", "Page.enable"] {
        cdp.call(method, json!({})).await;
    }
    (child, cdp)
}
