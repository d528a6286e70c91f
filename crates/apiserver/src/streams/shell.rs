//! `sh -c SCRIPT`: the small part of a POSIX shell that container commands and exec
//! sessions use, over the built-in commands. Pod specs write their commands this way
//! (`["sh", "-c", "echo started; sleep 5; exit 3"]`), so the simulated containers read
//! them as a shell would.
//!
//! Understood: commands separated by `;`, newlines, `&&` and `||`; `while`/`until LIST;
//! do LIST; done`, `for NAME in WORDS; do LIST; done`, `if LIST; then LIST; [elif ...]
//! [else LIST;] fi`; single and double quotes, backslash escapes, `#` comments; `$NAME`,
//! `${NAME}` and `$?` (the container's literal `env` values and `HOSTNAME`, and
//! variables the script assigns with `NAME=value`); command substitution `$(LIST)` (its
//! output, trailing newlines removed; its assignments stay inside); the values of
//! unquoted words split into fields at blanks; `>&2` / `1>&2` (stdout to stderr) and
//! `2>&1`; `exit N`, `:`, `exec CMD` (runs CMD). Anything else (pipes, other redirections,
//! subshells, backquotes, a command that is not built in) is refused as a shell refuses
//! it: a message on stderr and exit code 2 (a syntax error) or 127 (command not found).
//!
//! ```text
//! sh -c 'for i in $(seq 1 3); do echo "line $i at $(date +%s)"; done; echo done >&2; exit 4'
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::builtin_commands::{self, Capture, Output, Stdio};
use super::websocket::Gone;

/// The most output a command substitution keeps; the rest is dropped.
const MAX_SUBSTITUTION_OUTPUT: usize = 1024 * 1024;

/// The longest command an interactive shell collects.
const MAX_INTERACTIVE_SCRIPT: usize = 1024 * 1024;

/// How many chunks a pipe holds before its writer waits.
const PIPE_CHUNKS: usize = 16;

/// The exit code of a process SIGPIPE ended.
const SIGPIPE_EXIT_CODE: i32 = 141;

/// How often a loop may run: a script with no `sleep` in its loop would otherwise spin.
const MAX_LOOP_ITERATIONS: u64 = 10_000_000;

/// Runs `sh ARGS...`: `-c SCRIPT [NAME [ARGS...]]`, or with no arguments (or `-i`,
/// `-s`) the commands stdin sends, line by line; a script file is not supported. Its exit
/// code.
pub(crate) async fn sh(args: &[String], io: &mut Stdio) -> Result<i32, Gone> {
    let script = match args {
        [flag, script, ..] if flag == "-c" => script,
        [] => return interactive(io).await,
        [flag] if flag == "-i" || flag == "-s" => return interactive(io).await,
        _ => {
            return complain(
                io,
                "sh: only `sh -c SCRIPT` and commands on stdin are supported here\n",
                2,
            )
            .await;
        }
    };
    let list = match parse(script) {
        Ok(list) => list,
        Err(message) => return complain(io, &format!("sh: {message}\n"), 2).await,
    };
    let mut shell = Shell {
        vars: HashMap::new(),
        status: 0,
        substituted: None,
    };
    match shell.run_list(&list, io).await? {
        Flow::Next(code) | Flow::Exit(code) => Ok(code),
    }
}

/// Reads commands from stdin and runs each as soon as its line (or, for a loop or a quote
/// still open, the lines up to its end) arrived; ends at `exit` or at the end of stdin
/// with the last command's exit code.
async fn interactive(io: &mut Stdio) -> Result<i32, Gone> {
    let mut shell = Shell {
        vars: HashMap::new(),
        status: 0,
        substituted: None,
    };
    let mut pending: Vec<u8> = Vec::new();
    let mut script = String::new();
    loop {
        let chunk = io.read().await;
        let ended = chunk.is_none();
        if let Some(chunk) = chunk {
            pending.extend_from_slice(&chunk);
        }
        // Whole lines, or what is left at the end of stdin.
        let take = match pending.iter().rposition(|b| *b == b'\n') {
            Some(end) => end + 1,
            None if ended => pending.len(),
            None => continue,
        };
        script.push_str(&String::from_utf8_lossy(&pending[..take]));
        pending.drain(..take);
        if script.len() > MAX_INTERACTIVE_SCRIPT {
            complain(io, "sh: command too long\n", 2).await?;
            script.clear();
        }
        match parse(&script) {
            Ok(list) => {
                script.clear();
                match shell.run_list(&list, io).await? {
                    Flow::Next(code) => shell.status = code,
                    Flow::Exit(code) => return Ok(code),
                }
            }
            Err(message) if !ended && incomplete(&message) => {}
            Err(message) => {
                script.clear();
                complain(io, &format!("sh: {message}\n"), 2).await?;
                shell.status = 2;
            }
        }
        if ended {
            return Ok(shell.status);
        }
    }
}

/// Whether a parse error means more lines may complete the command.
fn incomplete(message: &str) -> bool {
    message.contains("unterminated") || message.contains("expected")
}

async fn complain(io: &Stdio, message: &str, code: i32) -> Result<i32, Gone> {
    io.stderr.write(message.as_bytes()).await?;
    Ok(code)
}

/// A piece of a word.
#[derive(Clone, Debug, PartialEq)]
enum Part {
    Text(String),
    /// `$NAME`, `${NAME}`, `$?`.
    Var(String),
    /// `$(LIST)`.
    Substitution(Arc<List>),
}

/// A word: its pieces, and whether any was quoted (a quoted empty word stays a word).
#[derive(Clone, Debug, Default, PartialEq)]
struct Word {
    parts: Vec<Part>,
    quoted: bool,
}

impl Word {
    /// The word as written, if it is plain unquoted text (a reserved word candidate).
    fn plain(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Text(text)] if !self.quoted => Some(text),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(Word),
    /// `;` or a newline.
    Separator,
    And,
    Or,
    /// `>&2`: the command's stdout goes to stderr.
    ToStderr,
    /// `2>&1`: stderr joins stdout, which is where both go anyway here.
    StderrToStdout,
    /// `|`.
    Pipe,
}

/// How a command joins the one before it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Connector {
    Then,
    And,
    Or,
}

#[derive(Debug, PartialEq)]
enum Command {
    Simple {
        words: Vec<Word>,
        to_stderr: bool,
    },
    Loop {
        until: bool,
        condition: List,
        body: List,
    },
    For {
        name: String,
        words: Vec<Word>,
        body: List,
    },
    If {
        branches: Vec<(List, List)>,
        otherwise: Option<List>,
    },
    /// `A | B | ...`: each in a copy of the shell, A's stdout B's stdin.
    Pipeline(Vec<Command>),
}

type List = Vec<(Connector, Command)>;

fn tokenize(script: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = script.chars().peekable();
    let mut word = Word::default();
    let mut text = String::new();
    let mut in_word = false;
    // Ends the current word (if any) and pushes it.
    fn end_word(tokens: &mut Vec<Token>, word: &mut Word, text: &mut String, in_word: &mut bool) {
        if !text.is_empty() {
            word.parts.push(Part::Text(std::mem::take(text)));
        }
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
        }
        *in_word = false;
    }
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\r' => end_word(&mut tokens, &mut word, &mut text, &mut in_word),
            '#' if !in_word => {
                while chars.peek().is_some_and(|c| *c != '\n') {
                    chars.next();
                }
            }
            '\n' | ';' => {
                end_word(&mut tokens, &mut word, &mut text, &mut in_word);
                tokens.push(Token::Separator);
            }
            '&' | '|' => {
                end_word(&mut tokens, &mut word, &mut text, &mut in_word);
                if chars.peek() == Some(&c) {
                    chars.next();
                    tokens.push(if c == '&' { Token::And } else { Token::Or });
                } else if c == '&' {
                    return Err("running commands in the background (`&`) is not supported".into());
                } else {
                    tokens.push(Token::Pipe);
                }
            }
            '>' => {
                // `1>&2`, `>&2` and `2>&1`: the descriptor digit was read as a word.
                let descriptor = match (word.parts.is_empty() && !word.quoted, text.as_str()) {
                    (true, "1" | "") => 1,
                    (true, "2") => 2,
                    _ => 0,
                };
                if descriptor == 0 {
                    end_word(&mut tokens, &mut word, &mut text, &mut in_word);
                }
                text.clear();
                in_word = false;
                word = Word::default();
                let target: String = [chars.next(), chars.next()].into_iter().flatten().collect();
                match (descriptor.max(1), target.as_str()) {
                    (1, "&2") => tokens.push(Token::ToStderr),
                    (2, "&1") => tokens.push(Token::StderrToStdout),
                    _ => {
                        return Err(
                            "redirections other than `>&2` and `2>&1` are not supported".into()
                        );
                    }
                }
            }
            '<' | '(' | ')' | '`' => {
                return Err(format!(
                    "`{c}` (redirections, subshells, backquotes) is not supported"
                ));
            }
            '\'' => {
                in_word = true;
                word.quoted = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => text.push(c),
                        None => return Err("unterminated quoted string".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                word.quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => text.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                text.push('\\');
                                text.push(c);
                            }
                            None => return Err("unterminated quoted string".into()),
                        },
                        Some('$') => variable(&mut chars, &mut word, &mut text)?,
                        Some(c) => text.push(c),
                        None => return Err("unterminated quoted string".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    // An escaped character is quoted: `a\ b` stays one field.
                    in_word = true;
                    word.quoted = true;
                    text.push(c);
                }
                None => {}
            },
            '$' => {
                in_word = true;
                variable(&mut chars, &mut word, &mut text)?;
            }
            c => {
                in_word = true;
                text.push(c);
            }
        }
    }
    end_word(&mut tokens, &mut word, &mut text, &mut in_word);
    Ok(tokens)
}

/// Reads a variable after `$` into `word` (a lone `$` is text).
fn variable(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    word: &mut Word,
    text: &mut String,
) -> Result<(), String> {
    let mut name = String::new();
    match chars.peek().copied() {
        Some('(') => {
            chars.next();
            let list = parse(&substitution_script(chars)?)?;
            if !text.is_empty() {
                word.parts.push(Part::Text(std::mem::take(text)));
            }
            word.parts.push(Part::Substitution(Arc::new(list)));
            return Ok(());
        }
        Some('{') => {
            chars.next();
            loop {
                match chars.next() {
                    Some('}') => break,
                    Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '?' => name.push(c),
                    _ => return Err("bad substitution (only `${NAME}` is supported)".into()),
                }
            }
        }
        Some('?') => {
            chars.next();
            name.push('?');
        }
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {
            while let Some(c) = chars
                .peek()
                .copied()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            {
                chars.next();
                name.push(c);
            }
        }
        _ => {
            text.push('$');
            return Ok(());
        }
    }
    if !text.is_empty() {
        word.parts.push(Part::Text(std::mem::take(text)));
    }
    word.parts.push(Part::Var(name));
    Ok(())
}

/// The script of a `$(...)` whose `$(` was read, up to its closing parenthesis (quotes
/// and nested substitutions skipped over).
fn substitution_script(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
) -> Result<String, String> {
    if chars.peek() == Some(&'(') {
        return Err("arithmetic expansion `$((...))` is not supported".into());
    }
    let mut script = String::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    loop {
        let Some(c) = chars.next() else {
            return Err("unterminated command substitution `$(`".into());
        };
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (Some('"'), '\\') => {
                script.push(c);
                if let Some(escaped) = chars.next() {
                    script.push(escaped);
                }
                continue;
            }
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') if depth == 0 => return Ok(script),
            (None, ')') => depth -= 1,
            (None, '\\') => {
                script.push(c);
                if let Some(escaped) = chars.next() {
                    script.push(escaped);
                }
                continue;
            }
            (None, _) => {}
        }
        script.push(c);
    }
}

fn parse(script: &str) -> Result<List, String> {
    let tokens = tokenize(script)?;
    let mut parser = Parser { tokens, at: 0 };
    let list = parser.list(&[])?;
    match parser.peek() {
        None => Ok(list),
        Some(token) => Err(format!("syntax error near {}", describe(token))),
    }
}

fn describe(token: &Token) -> String {
    match token {
        Token::Word(word) => format!("`{}`", word.plain().unwrap_or("word")),
        Token::Separator => "`;`".into(),
        Token::And => "`&&`".into(),
        Token::Or => "`||`".into(),
        Token::ToStderr => "`>&2`".into(),
        Token::StderrToStdout => "`2>&1`".into(),
        Token::Pipe => "`|`".into(),
    }
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn reserved(&self) -> Option<&str> {
        match self.peek() {
            Some(Token::Word(word)) => word.plain(),
            _ => None,
        }
    }

    fn skip_separators(&mut self) {
        while self.peek() == Some(&Token::Separator) {
            self.at += 1;
        }
    }

    fn expect(&mut self, word: &str) -> Result<(), String> {
        self.skip_separators();
        if self.reserved() == Some(word) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("syntax error: `{word}` expected"))
        }
    }

    /// Commands until one of `ends` (a reserved word in command position) or the end.
    fn list(&mut self, ends: &[&str]) -> Result<List, String> {
        let mut list = Vec::new();
        let mut connector = Connector::Then;
        loop {
            self.skip_separators();
            match self.reserved() {
                None if self.peek().is_none() => break,
                Some(word) if ends.contains(&word) => break,
                _ => {}
            }
            list.push((connector, self.pipeline()?));
            connector = match self.peek() {
                Some(Token::And) => Connector::And,
                Some(Token::Or) => Connector::Or,
                Some(Token::Separator) | None => Connector::Then,
                Some(token) => return Err(format!("syntax error near {}", describe(token))),
            };
            if connector != Connector::Then {
                self.at += 1;
            }
        }
        if connector != Connector::Then {
            return Err("syntax error: a command expected after `&&` or `||`".into());
        }
        Ok(list)
    }

    /// Commands joined by `|` (one alone is itself).
    fn pipeline(&mut self) -> Result<Command, String> {
        let first = self.command()?;
        if self.peek() != Some(&Token::Pipe) {
            return Ok(first);
        }
        let mut stages = vec![first];
        while self.peek() == Some(&Token::Pipe) {
            self.at += 1;
            self.skip_separators();
            if self.peek().is_none() {
                return Err("syntax error: a command expected after `|`".into());
            }
            stages.push(self.command()?);
        }
        Ok(Command::Pipeline(stages))
    }

    fn command(&mut self) -> Result<Command, String> {
        match self.reserved() {
            Some(keyword @ ("while" | "until")) => {
                let until = keyword == "until";
                self.at += 1;
                let condition = self.list(&["do"])?;
                self.expect("do")?;
                let body = self.list(&["done"])?;
                self.expect("done")?;
                Ok(Command::Loop {
                    until,
                    condition,
                    body,
                })
            }
            Some("for") => {
                self.at += 1;
                let name = match self.next() {
                    Some(Token::Word(word)) => word.plain().map(str::to_owned),
                    _ => None,
                }
                .ok_or("syntax error: a variable name expected after `for`")?;
                let mut words = Vec::new();
                if self.reserved() == Some("in") {
                    self.at += 1;
                    while let Some(Token::Word(word)) = self.peek() {
                        words.push(word.clone());
                        self.at += 1;
                    }
                }
                self.expect("do")?;
                let body = self.list(&["done"])?;
                self.expect("done")?;
                Ok(Command::For { name, words, body })
            }
            Some("if") => {
                self.at += 1;
                let mut branches = Vec::new();
                let mut otherwise = None;
                loop {
                    let condition = self.list(&["then"])?;
                    self.expect("then")?;
                    let body = self.list(&["elif", "else", "fi"])?;
                    branches.push((condition, body));
                    match self.reserved() {
                        Some("elif") => self.at += 1,
                        Some("else") => {
                            self.at += 1;
                            otherwise = Some(self.list(&["fi"])?);
                            self.expect("fi")?;
                            break;
                        }
                        _ => {
                            self.expect("fi")?;
                            break;
                        }
                    }
                }
                Ok(Command::If {
                    branches,
                    otherwise,
                })
            }
            Some(word @ ("do" | "done" | "then" | "elif" | "else" | "fi" | "in")) => {
                Err(format!("syntax error near unexpected `{word}`"))
            }
            _ => {
                let mut words = Vec::new();
                let mut to_stderr = false;
                loop {
                    match self.peek() {
                        Some(Token::Word(word)) => words.push(word.clone()),
                        Some(Token::ToStderr) => to_stderr = true,
                        Some(Token::StderrToStdout) => {}
                        _ => break,
                    }
                    self.at += 1;
                }
                if words.is_empty() && !to_stderr {
                    return Err(match self.peek() {
                        Some(token) => format!("syntax error near {}", describe(token)),
                        None => "syntax error: a command expected".into(),
                    });
                }
                Ok(Command::Simple { words, to_stderr })
            }
        }
    }
}

/// What running a command leaves: go on with its status, or the script exits.
#[derive(Clone, Copy, Debug)]
enum Flow {
    Next(i32),
    Exit(i32),
}

struct Shell {
    vars: HashMap<String, String>,
    status: i32,
    /// The exit code of the last command substitution of the command being expanded (a
    /// command with no command name ends with it).
    substituted: Option<i32>,
}

type Running<'a> = Pin<Box<dyn Future<Output = Result<Flow, Gone>> + Send + 'a>>;

impl Shell {
    fn lookup(&self, name: &str, io: &Stdio) -> String {
        if name == "?" {
            return self.status.to_string();
        }
        if let Some(value) = self.vars.get(name) {
            return value.clone();
        }
        io.env
            .iter()
            .find_map(|line| {
                line.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('='))
            })
            .unwrap_or("")
            .to_owned()
    }

    /// The words' values: an unquoted word's value split into fields at blanks (so one
    /// that expands to nothing is dropped), a quoted one kept whole.
    async fn expand(&mut self, words: &[Word], io: &Stdio) -> Result<Vec<String>, Gone> {
        let mut values = Vec::with_capacity(words.len());
        for word in words {
            let mut value = String::new();
            for part in &word.parts {
                match part {
                    Part::Text(text) => value.push_str(text),
                    Part::Var(name) => value.push_str(&self.lookup(name, io)),
                    Part::Substitution(list) => value.push_str(&self.substitute(list, io).await?),
                }
            }
            if word.quoted {
                values.push(value);
            } else {
                values.extend(value.split_ascii_whitespace().map(str::to_owned));
            }
        }
        Ok(values)
    }

    /// Runs `$(LIST)` in a copy of the shell (its assignments stay there) and returns its
    /// output without trailing newlines; its stderr goes where the script's goes.
    async fn substitute(&mut self, list: &List, io: &Stdio) -> Result<String, Gone> {
        let kept = Capture::with_limit(MAX_SUBSTITUTION_OUTPUT);
        let mut captured = Stdio {
            stdin: None,
            stdout: Output::Capture(kept.clone()),
            stderr: io.stderr.clone(),
            size: io.size.clone(),
            env: io.env.clone(),
            tty: false,
        };
        let mut inner = Shell {
            vars: self.vars.clone(),
            status: self.status,
            substituted: None,
        };
        let flow = inner.run_list(list, &mut captured).await?;
        self.substituted = Some(match flow {
            Flow::Next(code) | Flow::Exit(code) => code,
        });
        let mut text = kept.text();
        text.truncate(text.trim_end_matches('\n').len());
        Ok(text)
    }

    fn run_list<'a>(&'a mut self, list: &'a List, io: &'a mut Stdio) -> Running<'a> {
        Box::pin(async move {
            for (connector, command) in list {
                let runs = match connector {
                    Connector::Then => true,
                    Connector::And => self.status == 0,
                    Connector::Or => self.status != 0,
                };
                if !runs {
                    continue;
                }
                match self.run_command(command, io).await? {
                    Flow::Next(code) => self.status = code,
                    exit @ Flow::Exit(_) => return Ok(exit),
                }
            }
            Ok(Flow::Next(self.status))
        })
    }

    fn run_command<'a>(&'a mut self, command: &'a Command, io: &'a mut Stdio) -> Running<'a> {
        Box::pin(async move {
            match command {
                Command::Simple { words, to_stderr } => {
                    self.substituted = None;
                    let argv = self.expand(words, io).await?;
                    if *to_stderr {
                        let stdout = std::mem::replace(&mut io.stdout, io.stderr.clone());
                        let flow = self.simple(argv, io).await;
                        io.stdout = stdout;
                        flow
                    } else {
                        self.simple(argv, io).await
                    }
                }
                Command::Loop {
                    until,
                    condition,
                    body,
                } => {
                    let mut status = 0;
                    for _ in 0..MAX_LOOP_ITERATIONS {
                        match self.run_list(condition, io).await? {
                            Flow::Next(code) if (code == 0) != *until => {}
                            Flow::Next(_) => return Ok(Flow::Next(status)),
                            exit @ Flow::Exit(_) => return Ok(exit),
                        }
                        match self.run_list(body, io).await? {
                            Flow::Next(code) => status = code,
                            exit @ Flow::Exit(_) => return Ok(exit),
                        }
                        tokio::task::yield_now().await;
                    }
                    Ok(Flow::Next(status))
                }
                Command::For { name, words, body } => {
                    let mut status = 0;
                    for value in self.expand(words, io).await? {
                        self.vars.insert(name.clone(), value);
                        match self.run_list(body, io).await? {
                            Flow::Next(code) => status = code,
                            exit @ Flow::Exit(_) => return Ok(exit),
                        }
                    }
                    Ok(Flow::Next(status))
                }
                Command::Pipeline(stages) => self.pipeline(stages, io).await,
                Command::If {
                    branches,
                    otherwise,
                } => {
                    for (condition, body) in branches {
                        match self.run_list(condition, io).await? {
                            Flow::Next(0) => return self.run_list(body, io).await,
                            Flow::Next(_) => {}
                            exit @ Flow::Exit(_) => return Ok(exit),
                        }
                    }
                    match otherwise {
                        Some(body) => self.run_list(body, io).await,
                        None => Ok(Flow::Next(0)),
                    }
                }
            }
        })
    }

    /// Runs the stages at once, each in a copy of the shell; the last one's exit code is
    /// the pipeline's. A stage that writes after the next one stopped reading ends, as
    /// SIGPIPE ends it (exit code 141).
    async fn pipeline(&mut self, stages: &[Command], io: &mut Stdio) -> Result<Flow, Gone> {
        let mut stdios = Vec::with_capacity(stages.len());
        let mut stdin = io.stdin.take();
        for index in 0..stages.len() {
            let (stdout, next_stdin) = if index + 1 < stages.len() {
                let (sender, receiver) = tokio::sync::mpsc::channel(PIPE_CHUNKS);
                (Output::Pipe(sender), Some(receiver))
            } else {
                (io.stdout.clone(), None)
            };
            stdios.push(Stdio {
                stdin: stdin.take(),
                stdout,
                stderr: io.stderr.clone(),
                size: io.size.clone(),
                env: io.env.clone(),
                tty: io.tty,
            });
            stdin = next_stdin;
        }
        let last = stages.len().saturating_sub(1);
        let runs =
            stages
                .iter()
                .zip(stdios.iter_mut())
                .enumerate()
                .map(|(index, (stage, stdio))| {
                    let mut shell = Shell {
                        vars: self.vars.clone(),
                        status: self.status,
                        substituted: None,
                    };
                    async move {
                        let result = shell.run_command(stage, stdio).await;
                        // Its end closes the pipe to the next stage and (but for the first,
                        // which holds the session's stdin) the one from the stage before.
                        stdio.stdout = Output::Discard;
                        if index > 0 {
                            stdio.stdin = None;
                        }
                        match result {
                            Ok(Flow::Next(code) | Flow::Exit(code)) => Ok(code),
                            Err(gone) if index == last => Err(gone),
                            Err(_) => Ok(SIGPIPE_EXIT_CODE),
                        }
                    }
                });
        let codes = futures_util::future::join_all(runs).await;
        if let Some(first) = stdios.first_mut() {
            io.stdin = first.stdin.take();
        }
        match codes.last() {
            Some(Ok(code)) => Ok(Flow::Next(*code)),
            Some(Err(_)) => Err(Gone),
            None => Ok(Flow::Next(0)),
        }
    }

    async fn simple(&mut self, mut argv: Vec<String>, io: &mut Stdio) -> Result<Flow, Gone> {
        // Leading `NAME=value` words assign (for the rest of the script, here).
        while let Some((name, value)) = argv.first().and_then(|w| assignment(w)) {
            self.vars.insert(name, value);
            argv.remove(0);
        }
        if argv.first().is_some_and(|w| w == "exec") {
            argv.remove(0);
        }
        let Some(program) = argv.first() else {
            return Ok(Flow::Next(self.substituted.unwrap_or(0)));
        };
        match program.as_str() {
            ":" => Ok(Flow::Next(0)),
            "exit" => {
                let code = match argv.get(1) {
                    None => self.status,
                    Some(raw) => match raw.parse::<i64>() {
                        Ok(code) => i32::try_from(code.rem_euclid(256)).unwrap_or(1),
                        Err(_) => {
                            let message = format!("sh: exit: {raw}: numeric argument required\n");
                            io.stderr.write(message.as_bytes()).await?;
                            2
                        }
                    },
                };
                Ok(Flow::Exit(code))
            }
            _ => match builtin_commands::run(&argv, io).await {
                Ok(code) => Ok(Flow::Next(code)),
                Err(_) => {
                    let message = format!("sh: {program}: not found\n");
                    io.stderr.write(message.as_bytes()).await?;
                    Ok(Flow::Next(127))
                }
            },
        }
    }
}

/// `NAME=value` as a name and a value.
fn assignment(word: &str) -> Option<(String, String)> {
    let (name, value) = word.split_once('=')?;
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then(|| (name.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &Command) -> Vec<String> {
        match command {
            Command::Simple { words, .. } => words
                .iter()
                .map(|w| {
                    w.parts
                        .iter()
                        .map(|p| match p {
                            Part::Text(t) => t.clone(),
                            Part::Var(v) => format!("${{{v}}}"),
                            Part::Substitution(list) => format!("$({} commands)", list.len()),
                        })
                        .collect()
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn quotes_escapes_and_variables_make_words() {
        let list = parse(r#"echo 'a  b' "c $X d" e\ f ${Y}z # comment"#).unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(
            words(&list[0].1),
            ["echo", "a  b", "c ${X} d", "e f", "${Y}z"]
        );
    }

    /// Runs `sh -c script`; its exit code and what it wrote to stdout.
    async fn run_script(script: &str) -> (i32, String) {
        let kept = Capture::with_limit(MAX_SUBSTITUTION_OUTPUT);
        let mut io = Stdio {
            stdin: None,
            stdout: Output::Capture(kept.clone()),
            stderr: Output::Discard,
            size: tokio::sync::watch::channel(None).1,
            env: vec!["GREETING=hello  world".to_owned()],
            tty: false,
        };
        let code = sh(&["-c".to_owned(), script.to_owned()], &mut io)
            .await
            .expect("no client to go away");
        (code, kept.text())
    }

    #[tokio::test]
    async fn command_substitution_gives_output_split_into_fields_unless_quoted() {
        let (code, output) = run_script(
            "for i in $(seq 1 3); do echo \"n=$i\"; done; echo \"$(echo a; echo b)\"; X=$(echo inner; X=lost); echo $X; echo $GREETING; echo \"$GREETING\"; echo a\\ \\ b; $(exit 3); echo $?",
        )
        .await;
        assert_eq!(code, 0);
        assert_eq!(
            output,
            "n=1\nn=2\nn=3\na\nb\ninner\nhello world\nhello  world\na  b\n3\n"
        );
        let (code, output) = run_script("echo $(echo \"(nested)\" $(echo deep))").await;
        assert_eq!((code, output.as_str()), (0, "(nested) deep\n"));
        let (code, _) = run_script("echo $(echo unterminated").await;
        assert_eq!(code, 2);
        let (code, _) = run_script("echo $((1 + 2))").await;
        assert_eq!(code, 2);
        let (code, output) = run_script("ls /; ls /nope").await;
        assert_eq!(code, 2);
        assert!(output.starts_with("bin\ndev\n"), "{output}");
        let (code, output) = run_script("date +%Y").await;
        assert_eq!(code, 0);
        assert_eq!(output.trim().len(), 4, "{output}");
    }

    #[tokio::test]
    async fn pipelines_connect_stdout_to_stdin_and_end_with_the_last_stage() {
        let (code, output) = run_script(
            "echo -n 'This is a test string' | gzip | gzip -d; echo; seq 3 | cat | cat; false | true; echo $?; true | false; echo $?",
        )
        .await;
        assert_eq!(code, 0);
        assert_eq!(output, "This is a test string\n1\n2\n3\n0\n1\n");
        // The reader stops early: the writer ends (SIGPIPE) instead of running forever.
        let (code, output) = run_script("seq 10000000 | echo early; echo after").await;
        assert_eq!((code, output.as_str()), (0, "early\nafter\n"));
        let (code, _) = run_script("echo a |").await;
        assert_eq!(code, 2);
    }

    #[tokio::test]
    async fn without_a_script_the_shell_runs_what_stdin_sends() {
        let kept = Capture::default();
        let (sender, receiver) = tokio::sync::mpsc::channel(8);
        let mut io = Stdio {
            stdin: Some(receiver),
            stdout: Output::Capture(kept.clone()),
            stderr: Output::Capture(kept.clone()),
            size: tokio::sync::watch::channel(None).1,
            env: Vec::new(),
            tty: false,
        };
        for chunk in [
            "echo one\nfor i in 1 2",
            "; do\n echo $i\ndone\n",
            "bad (\n",
            "X=7\necho $X\nexit 3\necho never\n",
        ] {
            sender.send(bytes::Bytes::from(chunk)).await.expect("send");
        }
        drop(sender);
        let code = sh(&[], &mut io).await.expect("no client to go away");
        let output = kept.text();
        assert_eq!(code, 3);
        assert!(output.starts_with("one\n1\n2\nsh: "), "{output}");
        assert!(output.ends_with("7\n"), "{output}");
    }

    #[test]
    fn lists_loops_and_conditionals_parse() {
        let list = parse("true && echo yes || echo no; while true; do echo x; sleep 1; done\nfor i in 1 2; do echo $i; done; if false; then :; elif true; then echo e; else echo f; fi").unwrap();
        let connectors: Vec<Connector> = list.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            connectors,
            [
                Connector::Then,
                Connector::And,
                Connector::Or,
                Connector::Then,
                Connector::Then,
                Connector::Then
            ]
        );
        assert!(matches!(&list[3].1, Command::Loop { until: false, body, .. } if body.len() == 2));
        assert!(
            matches!(&list[4].1, Command::For { name, words, .. } if name == "i" && words.len() == 2)
        );
        assert!(
            matches!(&list[5].1, Command::If { branches, otherwise: Some(_) } if branches.len() == 2)
        );
    }

    #[test]
    fn redirections_to_stderr_are_understood_and_others_refused() {
        let list = parse("echo oops >&2; echo both 2>&1; echo also 1>&2").unwrap();
        assert!(matches!(
            &list[0].1,
            Command::Simple {
                to_stderr: true,
                ..
            }
        ));
        assert!(matches!(
            &list[1].1,
            Command::Simple {
                to_stderr: false,
                ..
            }
        ));
        assert_eq!(words(&list[1].1), ["echo", "both"]);
        assert!(matches!(
            &list[2].1,
            Command::Simple {
                to_stderr: true,
                ..
            }
        ));
        for bad in [
            "echo a | ",
            "echo > file",
            "(echo)",
            "echo 'open",
            "while true; do echo",
            "&& echo",
            "echo &&",
            "sleep 1 &",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn assignments_need_a_name() {
        assert_eq!(assignment("A_1=x=y"), Some(("A_1".into(), "x=y".into())));
        assert_eq!(assignment("1A=x"), None);
        assert_eq!(assignment("--flag=x"), None);
    }
}
