//! A scripted one-connection WebSocket server on 127.0.0.1 for the client's unit tests: it
//! upgrades with a chosen subprotocol and runs a test's script on the socket. The mock
//! runtime's real streaming server lives in `mock`; this only plays a server's part.

use std::sync::{Arc, Mutex};

use futures::Future;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::WebSocketStream;

/// The server's side of one connection.
pub(crate) type ServerSocket = WebSocketStream<TcpStream>;

/// A served connection: the URL to give the client, the request line's path and query once
/// the client came, and the task running the script.
pub(crate) struct Served {
    pub url: String,
    pub requested: Arc<Mutex<Option<String>>>,
    pub task: JoinHandle<()>,
}

/// Serves one WebSocket at `http://127.0.0.1:PORT/stream/token`, answering subprotocol
/// `protocol` when the client offers it, then runs `script` on the socket.
// tungstenite fixes the upgrade callback's error type (an HTTP response).
#[allow(clippy::result_large_err)]
pub(crate) async fn serve_once<F, Fut>(protocol: &'static str, script: F) -> Served
where
    F: FnOnce(ServerSocket) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/stream/token", listener.local_addr().unwrap());
    let requested = Arc::new(Mutex::new(None));
    let seen = requested.clone();
    let task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let choose = move |request: &Request, mut response: Response| {
            *seen.lock().unwrap() = Some(request.uri().to_string());
            let offered = request
                .headers()
                .get("Sec-WebSocket-Protocol")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if offered.split(',').any(|p| p.trim() == protocol) {
                response
                    .headers_mut()
                    .insert("Sec-WebSocket-Protocol", HeaderValue::from_static(protocol));
            }
            Ok(response)
        };
        let Ok(socket) = tokio_tungstenite::accept_hdr_async(tcp, choose).await else {
            return;
        };
        script(socket).await;
    });
    Served {
        url,
        requested,
        task,
    }
}
