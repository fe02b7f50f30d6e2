//! The exchange, the lead's watch and the tools' replies, without an agent.

use super::exchange::{self, Ask, Caller, Progress, Reply, ServerFile};
use super::server::{approve_result, ask_result};
use super::watch::{McpNews, McpWatch};

fn caller(nonce: &str) -> Caller {
    Caller {
        worker: "w".into(),
        attempt: 1,
        nonce: nonce.into(),
    }
}

fn ask(id: &str, nonce: &str) -> Ask {
    Ask {
        id: id.into(),
        caller: caller(nonce),
        question: "Which?".into(),
        choices: vec!["a".into()],
        default: Some("a".into()),
        approval: None,
        asked_at: chrono::Utc::now(),
    }
}

#[test]
fn the_watch_takes_its_attempts_calls_once_and_refuses_another_nonce() {
    let tmp = tempfile::tempdir().unwrap();
    let mut watch = McpWatch::new(tmp.path());
    assert!(
        watch.look("good", |_| true).is_empty(),
        "no folder: nothing"
    );
    let dir = watch.dir().to_path_buf();
    exchange::write_json(&exchange::ask_path(&dir, "7-1"), &ask("7-1", "good")).unwrap();
    exchange::write_json(&exchange::ask_path(&dir, "8-1"), &ask("8-1", "forged")).unwrap();
    for (nonce, text) in [("good", "reading"), ("forged", "done!")] {
        let p = Progress {
            nonce: nonce.into(),
            text: text.into(),
            at: chrono::Utc::now(),
        };
        exchange::append_progress(&dir, &p).unwrap();
    }
    let news = watch.look("good", |_| true);
    assert_eq!(news[0], McpNews::Progress("reading".into()));
    assert!(matches!(&news[1], McpNews::Refused(w) if w.contains("nonce")));
    assert!(matches!(&news[2], McpNews::Asked(a) if a.id == "7-1"));
    assert!(matches!(&news[3], McpNews::Refused(w) if w.contains("8-1")));
    assert_eq!(news.len(), 4, "{news:?}");
    // The forged ask got its refusal as a reply; nothing is taken twice.
    let r: Reply = exchange::read_json(&exchange::reply_path(&dir, "8-1"))
        .unwrap()
        .unwrap();
    assert!(matches!(r, Reply::Refused { .. }));
    assert!(watch.look("good", |_| true).is_empty());
}

#[test]
fn a_server_that_died_is_said_once_with_the_calls_it_left_open() {
    let tmp = tempfile::tempdir().unwrap();
    let mut watch = McpWatch::new(tmp.path());
    let dir = watch.dir().to_path_buf();
    let server = ServerFile {
        pid: 4242,
        caller: caller("good"),
        started_at: chrono::Utc::now(),
    };
    exchange::write_json(&exchange::server_path(&dir, 4242), &server).unwrap();
    exchange::write_json(&exchange::ask_path(&dir, "4242-1"), &ask("4242-1", "good")).unwrap();
    assert!(matches!(
        &watch.look("good", |_| true)[..],
        [McpNews::Asked(_)]
    ));
    let news = watch.look("good", |_| false);
    assert_eq!(
        news,
        [McpNews::ServerDied {
            pid: 4242,
            open_asks: vec!["4242-1".into()]
        }]
    );
    assert!(watch.look("good", |_| false).is_empty(), "said once");
}

#[test]
fn the_tools_say_what_each_reply_means() {
    let answer = Reply::Answer {
        text: "x\ty\n".into(),
    };
    assert_eq!(ask_result(&answer), ("x\ty\n".to_string(), false));
    let default = Reply::TimedOut {
        after_s: 5,
        default: Some("d".into()),
    };
    assert_eq!(ask_result(&default), ("d".to_string(), false));
    let none = Reply::TimedOut {
        after_s: 5,
        default: None,
    };
    assert!(ask_result(&none).0.contains("no default"));
    let refused = Reply::Refused {
        why: "refused: the run is cancelled".into(),
    };
    assert!(ask_result(&refused).1, "a refusal is a tool error");
    let input = serde_json::json!({"command": "ls"});
    assert_eq!(
        approve_result(&Reply::Allow { always: false }, &input),
        serde_json::json!({"behavior": "allow", "updatedInput": {"command": "ls"}})
    );
    let denied = approve_result(&Reply::Deny { reason: None }, &input);
    assert_eq!(denied["behavior"], "deny");
    assert_eq!(approve_result(&none, &input)["behavior"], "deny");
}

#[test]
fn the_launch_files_name_the_server_for_every_cli_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let m = super::config::McpLaunch::new(
        std::path::Path::new("/opt/crew mux/crewmux"),
        tmp.path(),
        &caller("n0"),
        Some(120),
    );
    m.write_files().unwrap();
    let cfg: serde_json::Value = exchange::read_json(&m.config_path()).unwrap().unwrap();
    let s = &cfg["mcpServers"]["crewmux"];
    assert_eq!(s["command"], "/opt/crew mux/crewmux");
    assert_eq!(s["args"][0], "mcp-serve");
    assert!(s["args"].as_array().unwrap().iter().any(|a| a == "n0"));
    let settings: serde_json::Value = exchange::read_json(&m.settings_path()).unwrap().unwrap();
    assert_eq!(settings["mcpServers"]["crewmux"]["trust"], true);
    assert_eq!(settings["mcpServers"]["crewmux"]["timeout"], 180_000);
    let oc: serde_json::Value = exchange::read_json(&m.opencode_path()).unwrap().unwrap();
    assert_eq!(oc["mcp"]["crewmux"]["command"][0], "/opt/crew mux/crewmux");
    assert_eq!(
        m.expand("mcp_servers.crewmux.command={mcp_command_toml}"),
        "mcp_servers.crewmux.command=\"/opt/crew mux/crewmux\""
    );
    let args = m.expand("{mcp_args_toml}");
    let parsed: toml::Value = toml::from_str(&format!("a = {args}")).unwrap();
    assert_eq!(parsed["a"][0].as_str(), Some("mcp-serve"));
}
