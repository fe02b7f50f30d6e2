//! A loopback model server for the real agent CLIs: it speaks just enough of the three
//! APIs they use to finish one turn with a scripted answer and scripted token usage.
//!
//! - OpenAI Responses (`POST …/responses`, SSE when `"stream": true`): codex.
//! - OpenAI Chat Completions (`POST …/chat/completions`, SSE with a usage chunk): qwen.
//! - Anthropic Messages (`POST …/v1/messages`, SSE when `"stream": true`): claude.
//! - Gemini (`POST …/models/<m>:streamGenerateContent?alt=sse`, `:generateContent`,
//!   `:countTokens`): gemini.
//!
//! Every request is recorded (method, path, the key it carried). A request carrying
//! [`REJECTED_KEY`] gets the API's own 401 error, so the CLIs' auth failures can be seen
//! end to end. Event shapes follow each provider's public API reference.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{json, Value};
use tiny_http::{Header, Request, Response, Server};

/// A key every endpoint refuses as its API does (401; Gemini 400 `API_KEY_INVALID`).
pub const REJECTED_KEY: &str = "loopback-rejected-key";

/// What every model request is answered with.
#[derive(Debug, Clone)]
pub struct Script {
    pub answer: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// One request the server saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The key it carried (`Authorization: Bearer`, `x-api-key` or `x-goog-api-key`).
    pub key: Option<String>,
    /// The HTTP status it was answered with.
    pub status: u16,
    /// The request's JSON body as sent (`null` when it was not JSON).
    pub body: String,
}

/// The running server; stopped on drop.
pub struct ModelServer {
    server: Arc<Server>,
    seen: Arc<Mutex<Vec<Seen>>>,
    thread: Option<JoinHandle<()>>,
    port: u16,
}

impl ModelServer {
    /// Listen on 127.0.0.1 (a free port) and answer every model request with `script`.
    pub fn start(script: Script) -> Self {
        let server = Arc::new(Server::http("127.0.0.1:0").expect("bind a loopback port"));
        let port = server.server_addr().to_ip().expect("an IP listener").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (srv, log) = (Arc::clone(&server), Arc::clone(&seen));
        let thread = std::thread::spawn(move || {
            for req in srv.incoming_requests() {
                let (script, log) = (script.clone(), Arc::clone(&log));
                // One thread a request: a CLI may hold one stream open while it sends another.
                std::thread::spawn(move || handle(req, &script, &log));
            }
        });
        ModelServer {
            server,
            seen,
            thread: Some(thread),
            port,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What an API answers: status, content type, body.
struct Answer(u16, &'static str, String);

fn handle(mut req: Request, script: &Script, log: &Mutex<Vec<Seen>>) {
    let mut body = String::new();
    // A body that is not UTF-8 (compressed) is treated as empty: defaults apply.
    let _ = req.as_reader().read_to_string(&mut body);
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let key = request_key(&req);
    let path = req.url().to_string();
    let route = path.split('?').next().unwrap_or_default().to_string();
    let rejected = key.as_deref() == Some(REJECTED_KEY);
    let stream = body["stream"].as_bool().unwrap_or(false);
    let model = body["model"]
        .as_str()
        .unwrap_or("loopback-model")
        .to_string();
    let Answer(status, kind, text) =
        if route.ends_with("/responses") && req.method().as_str() == "POST" {
            if rejected {
                openai_error()
            } else {
                responses(script, &model, stream)
            }
        } else if route.ends_with("/chat/completions") {
            if rejected {
                openai_error()
            } else {
                chat(script, &model, stream)
            }
        } else if route.ends_with("/v1/messages") {
            if rejected {
                anthropic_error()
            } else {
                messages(script, &model, stream)
            }
        } else if let Some((_, method)) = route
            .rsplit_once(':')
            .filter(|_| route.contains("/models/"))
        {
            if rejected {
                gemini_error()
            } else {
                gemini(script, method)
            }
        } else {
            Answer(
                404,
                "application/json",
                r#"{"error":{"message":"not here"}}"#.into(),
            )
        };
    log.lock().unwrap().push(Seen {
        method: req.method().as_str().to_string(),
        path,
        key,
        status,
        body: body.to_string(),
    });
    let response = Response::from_string(text)
        .with_status_code(status)
        .with_header(Header::from_bytes("Content-Type", kind).unwrap())
        .with_header(Header::from_bytes("Cache-Control", "no-cache").unwrap());
    // The CLI may have given up on the request; nothing to do about it here.
    let _ = req.respond(response);
}

fn request_key(req: &Request) -> Option<String> {
    req.headers().iter().find_map(|h| {
        let name = h.field.as_str().as_str().to_ascii_lowercase();
        let v = h.value.as_str();
        match name.as_str() {
            "authorization" => Some(v.trim_start_matches("Bearer ").to_string()),
            "x-api-key" | "x-goog-api-key" => Some(v.to_string()),
            _ => None,
        }
    })
}

/// `event: <type>` + `data: <json>` pairs, as OpenAI and Anthropic stream them.
fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| {
            format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap_or("message")
            )
        })
        .collect()
}

/// The answer in two pieces, so every CLI sees more than one delta.
fn halves(text: &str) -> (&str, &str) {
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    text.split_at(mid)
}

fn responses(s: &Script, model: &str, stream: bool) -> Answer {
    let item = json!({
        "type": "message", "id": "msg_loop", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": s.answer, "annotations": []}]
    });
    let usage = json!({
        "input_tokens": s.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": s.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": s.input_tokens + s.output_tokens
    });
    let response = json!({
        "id": "resp_loop", "object": "response", "model": model, "status": "completed",
        "output": [item], "usage": usage
    });
    if !stream {
        return Answer(200, "application/json", response.to_string());
    }
    let (a, b) = halves(&s.answer);
    let mut created = response.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    let events = [
        json!({"type": "response.created", "response": created}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "id": "msg_loop", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_loop", "output_index": 0,
               "content_index": 0, "delta": a}),
        json!({"type": "response.output_text.delta", "item_id": "msg_loop", "output_index": 0,
               "content_index": 0, "delta": b}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": response}),
    ];
    Answer(200, "text/event-stream", sse(&events))
}

fn chat(s: &Script, model: &str, stream: bool) -> Answer {
    let usage = json!({
        "prompt_tokens": s.input_tokens,
        "completion_tokens": s.output_tokens,
        "total_tokens": s.input_tokens + s.output_tokens
    });
    if !stream {
        let body = json!({
            "id": "chatcmpl-loop", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": s.answer}}],
            "usage": usage
        });
        return Answer(200, "application/json", body.to_string());
    }
    let chunk = |choices: Value, usage: Value| {
        json!({"id": "chatcmpl-loop", "object": "chat.completion.chunk", "created": 0,
               "model": model, "choices": choices, "usage": usage})
    };
    let (a, b) = halves(&s.answer);
    let chunks = [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": a}, "finish_reason": null}]),
            Value::Null,
        ),
        chunk(
            json!([{"index": 0, "delta": {"content": b}, "finish_reason": null}]),
            Value::Null,
        ),
        chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            Value::Null,
        ),
        chunk(json!([]), usage),
    ];
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    Answer(200, "text/event-stream", text)
}

fn messages(s: &Script, model: &str, stream: bool) -> Answer {
    let usage = json!({
        "input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0
    });
    if !stream {
        let body = json!({
            "id": "msg_loop", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": s.answer}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": usage
        });
        return Answer(200, "application/json", body.to_string());
    }
    let (a, b) = halves(&s.answer);
    let mut start_usage = usage.clone();
    start_usage["output_tokens"] = json!(1);
    let delta = |t: &str| json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}});
    let events = [
        json!({"type": "message_start", "message": {
            "id": "msg_loop", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        delta(a),
        delta(b),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               "usage": {"output_tokens": s.output_tokens}}),
        json!({"type": "message_stop"}),
    ];
    Answer(200, "text/event-stream", sse(&events))
}

fn gemini(s: &Script, method: &str) -> Answer {
    let usage = json!({
        "promptTokenCount": s.input_tokens,
        "candidatesTokenCount": s.output_tokens,
        "totalTokenCount": s.input_tokens + s.output_tokens
    });
    let chunk = |text: &str, last: bool| {
        let mut c = json!({
            "candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": text}]}}],
            "modelVersion": "loopback"
        });
        if last {
            c["candidates"][0]["finishReason"] = json!("STOP");
            c["usageMetadata"] = usage.clone();
        }
        c
    };
    match method {
        "countTokens" => Answer(
            200,
            "application/json",
            json!({"totalTokens": s.input_tokens}).to_string(),
        ),
        "generateContent" => Answer(200, "application/json", chunk(&s.answer, true).to_string()),
        "streamGenerateContent" => {
            let (a, b) = halves(&s.answer);
            let text = format!("data: {}\n\ndata: {}\n\n", chunk(a, false), chunk(b, true));
            Answer(200, "text/event-stream", text)
        }
        _ => Answer(404, "application/json", r#"{"error":{"code":404}}"#.into()),
    }
}

fn openai_error() -> Answer {
    let body = json!({"error": {"message": "Incorrect API key provided: loopback-rejected-key.",
                                "type": "invalid_request_error", "code": "invalid_api_key"}});
    Answer(401, "application/json", body.to_string())
}

fn anthropic_error() -> Answer {
    let body = json!({"type": "error",
                      "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
    Answer(401, "application/json", body.to_string())
}

/// As the Gemini API answers a bad key: 400, not 401.
fn gemini_error() -> Answer {
    let body = json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
        "message": "API key not valid. Please pass a valid API key.",
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                     "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}});
    Answer(400, "application/json", body.to_string())
}
