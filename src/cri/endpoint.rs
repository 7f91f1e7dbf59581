//! CRI endpoints: parsing `unix:///path`, bare socket paths and `tcp://HOST:PORT`, and choosing
//! the runtime and image endpoints the way crictl does (flag, then environment, then crictl's
//! config file). The CLI reads the flags and variables with clap; resolution is a pure function
//! of what it read, so it can be tested without the process environment.

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

/// Environment variable crictl and critest read the runtime endpoint from.
pub const RUNTIME_ENDPOINT_ENV: &str = "CONTAINER_RUNTIME_ENDPOINT";
/// Environment variable crictl reads the image endpoint from.
pub const IMAGE_ENDPOINT_ENV: &str = "IMAGE_SERVICE_ENDPOINT";
/// Environment variable that points crictl at another config file.
pub const CRICTL_CONFIG_ENV: &str = "CRI_CONFIG_FILE";
/// crictl's config file when neither `--config` nor [`CRICTL_CONFIG_ENV`] says otherwise.
pub const DEFAULT_CRICTL_CONFIG: &str = "/etc/crictl.yaml";

/// The forms an endpoint may take, quoted by every parse error.
const ACCEPTED_FORMS: &str = "unix:///path/to/socket, a socket path, or tcp://HOST:PORT";

/// Where a CRI runtime listens.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// A unix socket, by absolute path.
    Unix(PathBuf),
    /// A TCP address; `host` is an IPv4 address, an IPv6 address (without brackets) or
    /// `localhost`.
    Tcp {
        /// Host part, canonical (IPv6 without brackets).
        host: String,
        /// Port, never 0.
        port: u16,
    },
}

/// Why an endpoint could not be parsed or chosen.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The endpoint text was empty.
    #[error("empty CRI endpoint; expected {ACCEPTED_FORMS}")]
    Empty,
    /// The text names a scheme other than `unix` or `tcp` (for example `npipe://`).
    #[error("unsupported CRI endpoint {text:?}: scheme {scheme:?} is not served here; expected {ACCEPTED_FORMS}")]
    UnsupportedScheme {
        /// The endpoint as given.
        text: String,
        /// The scheme it named.
        scheme: String,
    },
    /// A `unix://` endpoint whose path is not absolute (`unix://run/x.sock` has two slashes).
    #[error("invalid CRI endpoint {text:?}: a unix endpoint needs an absolute path (unix:///path/to/socket); expected {ACCEPTED_FORMS}")]
    UnixNotAbsolute {
        /// The endpoint as given.
        text: String,
    },
    /// A `tcp://` endpoint that is not `HOST:PORT` with a usable host and port.
    #[error("invalid CRI endpoint {text:?}: {problem}; expected {ACCEPTED_FORMS}")]
    TcpAddress {
        /// The endpoint as given.
        text: String,
        /// What is wrong with the address.
        problem: &'static str,
    },
    /// A relative socket path, while the current directory cannot be read to anchor it.
    #[error(
        "cannot make the CRI endpoint path {text:?} absolute: the current directory is unreadable"
    )]
    NoCurrentDir {
        /// The endpoint as given.
        text: String,
    },
    /// An endpoint taken from a flag, variable or config key did not parse.
    #[error("{service} endpoint from {origin}")]
    Invalid {
        /// `runtime` or `image`.
        service: &'static str,
        /// The flag, variable or config key it came from.
        origin: String,
        /// The parse failure.
        #[source]
        source: Box<EndpointError>,
    },
    /// No flag, variable or config key named a runtime endpoint.
    #[error("no CRI runtime endpoint: pass -r/--runtime-endpoint, set {RUNTIME_ENDPOINT_ENV}, or set runtime-endpoint in {}", config.display())]
    Missing {
        /// The crictl config file that was consulted.
        config: PathBuf,
    },
    /// crictl's config file exists but could not be read.
    #[error("cannot read crictl config {}", path.display())]
    ConfigRead {
        /// The config file.
        path: PathBuf,
        /// The read failure.
        #[source]
        source: io::Error,
    },
    /// crictl's config file is not the YAML mapping crictl writes.
    #[error("cannot parse crictl config {}", path.display())]
    ConfigParse {
        /// The config file.
        path: PathBuf,
        /// The YAML failure.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
}

impl Endpoint {
    /// Parses `text`, anchoring a relative socket path at `base` (normally the current
    /// directory; `None` when it is unknown, which makes relative paths an error).
    pub fn parse_relative_to(text: &str, base: Option<&Path>) -> Result<Self, EndpointError> {
        if text.is_empty() {
            return Err(EndpointError::Empty);
        }
        let Some((scheme, rest)) = text.split_once("://") else {
            return bare_path(text, base);
        };
        if scheme.eq_ignore_ascii_case("unix") {
            let path = Path::new(rest);
            if !path.is_absolute() {
                return Err(EndpointError::UnixNotAbsolute { text: text.into() });
            }
            Ok(Self::Unix(normalize(path)))
        } else if scheme.eq_ignore_ascii_case("tcp") {
            tcp(text, rest)
        } else {
            Err(EndpointError::UnsupportedScheme {
                text: text.into(),
                scheme: scheme.into(),
            })
        }
    }

    /// The socket path of a unix endpoint.
    pub fn unix_path(&self) -> Option<&Path> {
        match self {
            Self::Unix(path) => Some(path),
            Self::Tcp { .. } => None,
        }
    }
}

fn bare_path(text: &str, base: Option<&Path>) -> Result<Endpoint, EndpointError> {
    let path = Path::new(text);
    if path.is_absolute() {
        return Ok(Endpoint::Unix(normalize(path)));
    }
    match base {
        Some(base) => Ok(Endpoint::Unix(normalize(&base.join(path)))),
        None => Err(EndpointError::NoCurrentDir { text: text.into() }),
    }
}

/// Drops `.` components and doubled slashes; `..` stays, since resolving it lexically could
/// point somewhere else than the kernel would through a symlink.
fn normalize(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

fn tcp(text: &str, address: &str) -> Result<Endpoint, EndpointError> {
    let fail = |problem| EndpointError::TcpAddress {
        text: text.into(),
        problem,
    };
    let (host, port) = if let Some(bracketed) = address.strip_prefix('[') {
        let (v6, after) = bracketed
            .split_once(']')
            .ok_or_else(|| fail("an IPv6 host needs a closing bracket"))?;
        let port = after
            .strip_prefix(':')
            .ok_or_else(|| fail("the address has no :PORT"))?;
        let v6: Ipv6Addr = v6
            .parse()
            .map_err(|_| fail("the bracketed host is not an IPv6 address"))?;
        (v6.to_string(), port)
    } else {
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| fail("the address has no :PORT"))?;
        let host = if host.eq_ignore_ascii_case("localhost") {
            "localhost".to_owned()
        } else {
            host.parse::<Ipv4Addr>()
                .map_err(|_| fail("the host must be an IPv4 address, [IPv6 address] or localhost"))?
                .to_string()
        };
        (host, port)
    };
    let port = match port.parse::<u16>() {
        Ok(0) | Err(_) => return Err(fail("the port must be a number from 1 to 65535")),
        Ok(port) => port,
    };
    Ok(Endpoint::Tcp { host, port })
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    /// Parses an endpoint; a relative path is anchored at the current directory.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let cwd = std::env::current_dir().ok();
        Self::parse_relative_to(text, cwd.as_deref())
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unix(path) => write!(f, "unix://{}", path.display()),
            Self::Tcp { host, port } if host.contains(':') => write!(f, "tcp://[{host}]:{port}"),
            Self::Tcp { host, port } => write!(f, "tcp://{host}:{port}"),
        }
    }
}

/// Where a resolved endpoint came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointSource {
    /// A command-line flag.
    Flag,
    /// An environment variable.
    Env,
    /// A key in crictl's config file at this path.
    CrictlConfig(PathBuf),
}

impl fmt::Display for EndpointSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Flag => f.write_str("command line"),
            Self::Env => f.write_str("environment"),
            Self::CrictlConfig(path) => write!(f, "crictl config {}", path.display()),
        }
    }
}

/// Everything endpoint resolution looks at, gathered by the caller (the CLI reads the real
/// flags and environment; tests pass literals).
#[derive(Debug, Clone, Default)]
pub struct EndpointInputs {
    /// `-r/--runtime-endpoint`.
    pub runtime_flag: Option<String>,
    /// `-i/--image-endpoint`.
    pub image_flag: Option<String>,
    /// [`RUNTIME_ENDPOINT_ENV`].
    pub runtime_env: Option<String>,
    /// [`IMAGE_ENDPOINT_ENV`].
    pub image_env: Option<String>,
    /// crictl's config file: `--config`, else [`CRICTL_CONFIG_ENV`], else
    /// [`DEFAULT_CRICTL_CONFIG`] (the CLI gets it from clap).
    pub config_path: PathBuf,
    /// Anchor for relative socket paths; `None` if the current directory is unreadable.
    pub cwd: Option<PathBuf>,
}

/// The runtime and image endpoints with where each came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedEndpoints {
    /// Where RuntimeService is served.
    pub runtime: Endpoint,
    /// Where the runtime endpoint came from.
    pub runtime_source: EndpointSource,
    /// Where ImageService is served (often the runtime endpoint).
    pub image: Endpoint,
    /// Where the image endpoint came from.
    pub image_source: EndpointSource,
}

/// The endpoint keys of crictl's config file; crictl's other keys are ignored.
#[derive(Debug, Default, serde::Deserialize)]
struct CrictlConfig {
    #[serde(rename = "runtime-endpoint", default)]
    runtime_endpoint: Option<String>,
    #[serde(rename = "image-endpoint", default)]
    image_endpoint: Option<String>,
}

/// Reads crictl's config file; a file that does not exist is no config, as for crictl.
pub fn read_crictl_config(path: &Path) -> Result<Option<String>, EndpointError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(EndpointError::ConfigRead {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Chooses the runtime and image endpoints in crictl's order: flag, then environment, then
/// crictl's config file; the image endpoint falls back to the runtime endpoint. `load_config`
/// is only called when a flag or variable is missing, so an unreadable config file does not
/// matter when it is not needed. Empty values count as unset, as they do for crictl.
pub fn resolve_endpoints(
    inputs: &EndpointInputs,
    load_config: impl FnOnce(&Path) -> Result<Option<String>, EndpointError>,
) -> Result<ResolvedEndpoints, EndpointError> {
    let set = |value: &Option<String>| {
        value
            .as_deref()
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let runtime_given = set(&inputs.runtime_flag)
        .map(|t| (t, EndpointSource::Flag, "-r/--runtime-endpoint".to_owned()))
        .or_else(|| {
            set(&inputs.runtime_env)
                .map(|t| (t, EndpointSource::Env, RUNTIME_ENDPOINT_ENV.to_owned()))
        });
    let image_given = set(&inputs.image_flag)
        .map(|t| (t, EndpointSource::Flag, "-i/--image-endpoint".to_owned()))
        .or_else(|| {
            set(&inputs.image_env).map(|t| (t, EndpointSource::Env, IMAGE_ENDPOINT_ENV.to_owned()))
        });

    let config = if runtime_given.is_some() && image_given.is_some() {
        CrictlConfig::default()
    } else {
        parse_config(&inputs.config_path, load_config(&inputs.config_path)?)?
    };
    let from_config = |value: &Option<String>, key: &str| {
        set(value).map(|t| {
            let origin = format!("{key} in {}", inputs.config_path.display());
            (
                t,
                EndpointSource::CrictlConfig(inputs.config_path.clone()),
                origin,
            )
        })
    };

    let (text, runtime_source, origin) = runtime_given
        .or_else(|| from_config(&config.runtime_endpoint, "runtime-endpoint"))
        .ok_or_else(|| EndpointError::Missing {
            config: inputs.config_path.clone(),
        })?;
    let runtime = parse_from("runtime", &text, origin, inputs.cwd.as_deref())?;

    let (image, image_source) =
        match image_given.or_else(|| from_config(&config.image_endpoint, "image-endpoint")) {
            Some((text, source, origin)) => (
                parse_from("image", &text, origin, inputs.cwd.as_deref())?,
                source,
            ),
            None => (runtime.clone(), runtime_source.clone()),
        };
    Ok(ResolvedEndpoints {
        runtime,
        runtime_source,
        image,
        image_source,
    })
}

fn parse_config(path: &Path, text: Option<String>) -> Result<CrictlConfig, EndpointError> {
    let Some(text) = text else {
        return Ok(CrictlConfig::default());
    };
    // An empty or comment-only file is a valid, empty crictl config.
    let parsed: Option<CrictlConfig> =
        serde_saphyr::from_str(&text).map_err(|source| EndpointError::ConfigParse {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
    Ok(parsed.unwrap_or_default())
}

fn parse_from(
    service: &'static str,
    text: &str,
    origin: String,
    cwd: Option<&Path>,
) -> Result<Endpoint, EndpointError> {
    Endpoint::parse_relative_to(text, cwd).map_err(|err| EndpointError::Invalid {
        service,
        origin,
        source: Box::new(err),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn unix(path: &str) -> Endpoint {
        Endpoint::Unix(PathBuf::from(path))
    }

    fn tcp(host: &str, port: u16) -> Endpoint {
        Endpoint::Tcp {
            host: host.into(),
            port,
        }
    }

    #[rstest]
    #[case::unix_url(
        "unix:///run/containerd/containerd.sock",
        unix("/run/containerd/containerd.sock")
    )]
    #[case::unix_scheme_in_capitals("UNIX:///run/x.sock", unix("/run/x.sock"))]
    #[case::unix_url_with_dot_components("unix:///run/./x//y.sock", unix("/run/x/y.sock"))]
    #[case::absolute_path("/run/crio/crio.sock", unix("/run/crio/crio.sock"))]
    #[case::relative_path("m.sock", unix("/home/me/m.sock"))]
    #[case::relative_path_with_dot("./sub/m.sock", unix("/home/me/sub/m.sock"))]
    #[case::relative_path_keeps_dotdot("../m.sock", unix("/home/me/../m.sock"))]
    #[case::tcp_ipv4("tcp://127.0.0.1:5000", tcp("127.0.0.1", 5000))]
    #[case::tcp_localhost("tcp://LocalHost:1", tcp("localhost", 1))]
    #[case::tcp_ipv6("tcp://[::1]:65535", tcp("::1", 65535))]
    #[case::tcp_ipv6_canonicalized("tcp://[0:0::0001]:80", tcp("::1", 80))]
    fn parses_accepted_forms(#[case] text: &str, #[case] expected: Endpoint) {
        let parsed = Endpoint::parse_relative_to(text, Some(Path::new("/home/me")));
        assert_eq!(parsed.unwrap(), expected);
    }

    #[rstest]
    #[case::empty("", "empty CRI endpoint")]
    #[case::npipe("npipe:////./pipe/containerd", "scheme \"npipe\"")]
    #[case::http("http://127.0.0.1:80", "scheme \"http\"")]
    #[case::empty_scheme("://x", "scheme \"\"")]
    #[case::unix_relative("unix://run/x.sock", "needs an absolute path")]
    #[case::unix_empty("unix://", "needs an absolute path")]
    #[case::tcp_without_port("tcp://127.0.0.1", "no :PORT")]
    #[case::tcp_port_zero("tcp://127.0.0.1:0", "port must be")]
    #[case::tcp_port_too_large("tcp://127.0.0.1:65536", "port must be")]
    #[case::tcp_port_with_path("tcp://127.0.0.1:80/x", "port must be")]
    #[case::tcp_hostname("tcp://example.com:80", "IPv4 address, [IPv6 address] or localhost")]
    #[case::tcp_ipv6_without_brackets("tcp://::1:80", "IPv4 address")]
    #[case::tcp_ipv6_unclosed("tcp://[::1:80", "closing bracket")]
    #[case::tcp_ipv6_without_port("tcp://[::1]", "no :PORT")]
    #[case::tcp_bracketed_ipv4("tcp://[127.0.0.1]:80", "not an IPv6 address")]
    fn rejects_other_forms_naming_the_text_and_the_accepted_forms(
        #[case] text: &str,
        #[case] problem: &str,
    ) {
        let message = Endpoint::parse_relative_to(text, Some(Path::new("/")))
            .unwrap_err()
            .to_string();
        assert!(message.contains(problem), "{message}");
        assert!(
            message.contains(&format!("{text:?}")) || text.is_empty(),
            "{message}"
        );
        assert!(message.contains(ACCEPTED_FORMS), "{message}");
        assert!(!message.contains('\n'), "{message}");
    }

    #[test]
    fn relative_path_without_a_current_directory_is_an_error() {
        let err = Endpoint::parse_relative_to("m.sock", None).unwrap_err();
        assert!(matches!(err, EndpointError::NoCurrentDir { .. }), "{err:?}");
    }

    #[rstest]
    #[case::unix("unix:///run/x.sock", "unix:///run/x.sock")]
    #[case::bare_path("/run/x.sock", "unix:///run/x.sock")]
    #[case::tcp_ipv4("tcp://127.0.0.1:5000", "tcp://127.0.0.1:5000")]
    #[case::tcp_ipv6("tcp://[::1]:5000", "tcp://[::1]:5000")]
    fn display_is_canonical_and_parses_back(#[case] text: &str, #[case] shown: &str) {
        let endpoint = Endpoint::parse_relative_to(text, None).unwrap();
        assert_eq!(endpoint.to_string(), shown);
        assert_eq!(Endpoint::parse_relative_to(shown, None).unwrap(), endpoint);
    }

    const CONFIG: &str = "/etc/crictl.yaml";

    fn inputs(
        runtime_flag: Option<&str>,
        image_flag: Option<&str>,
        runtime_env: Option<&str>,
        image_env: Option<&str>,
    ) -> EndpointInputs {
        EndpointInputs {
            runtime_flag: runtime_flag.map(Into::into),
            image_flag: image_flag.map(Into::into),
            runtime_env: runtime_env.map(Into::into),
            image_env: image_env.map(Into::into),
            config_path: PathBuf::from(CONFIG),
            cwd: Some(PathBuf::from("/work")),
        }
    }

    fn from_config() -> EndpointSource {
        EndpointSource::CrictlConfig(PathBuf::from(CONFIG))
    }

    const FULL_CONFIG: &str =
        "runtime-endpoint: unix:///cfg/r.sock\nimage-endpoint: unix:///cfg/i.sock\ntimeout: 2\n";
    const RUNTIME_ONLY_CONFIG: &str = "runtime-endpoint: unix:///cfg/r.sock\n";

    #[rstest]
    #[case::flag_beats_env_and_config(
        inputs(Some("/flag.sock"), None, Some("/env.sock"), None), Some(RUNTIME_ONLY_CONFIG),
        ("/flag.sock", EndpointSource::Flag), ("/flag.sock", EndpointSource::Flag))]
    #[case::env_beats_config(
        inputs(None, None, Some("/env.sock"), None), Some(RUNTIME_ONLY_CONFIG),
        ("/env.sock", EndpointSource::Env), ("/env.sock", EndpointSource::Env))]
    #[case::config_when_nothing_else(
        inputs(None, None, None, None), Some(RUNTIME_ONLY_CONFIG),
        ("/cfg/r.sock", from_config()), ("/cfg/r.sock", from_config()))]
    #[case::config_image_endpoint(
        inputs(None, None, None, None), Some(FULL_CONFIG),
        ("/cfg/r.sock", from_config()), ("/cfg/i.sock", from_config()))]
    #[case::runtime_flag_with_config_image_endpoint(
        inputs(Some("/flag.sock"), None, None, None), Some(FULL_CONFIG),
        ("/flag.sock", EndpointSource::Flag), ("/cfg/i.sock", from_config()))]
    #[case::image_flag_beats_image_env(
        inputs(Some("/r.sock"), Some("/i-flag.sock"), None, Some("/i-env.sock")), None,
        ("/r.sock", EndpointSource::Flag), ("/i-flag.sock", EndpointSource::Flag))]
    #[case::image_env_beats_config(
        inputs(None, None, None, Some("/i-env.sock")), Some(FULL_CONFIG),
        ("/cfg/r.sock", from_config()), ("/i-env.sock", EndpointSource::Env))]
    #[case::empty_values_count_as_unset(
        inputs(Some(""), Some(""), Some(""), Some("")), Some(RUNTIME_ONLY_CONFIG),
        ("/cfg/r.sock", from_config()), ("/cfg/r.sock", from_config()))]
    #[case::empty_config_keys_count_as_unset(
        inputs(None, None, Some("/env.sock"), None), Some("runtime-endpoint: \"\"\nimage-endpoint: \"\"\n"),
        ("/env.sock", EndpointSource::Env), ("/env.sock", EndpointSource::Env))]
    #[case::missing_config_file(
        inputs(None, None, Some("/env.sock"), None), None,
        ("/env.sock", EndpointSource::Env), ("/env.sock", EndpointSource::Env))]
    #[case::comment_only_config_file(
        inputs(None, None, Some("/env.sock"), None), Some("# nothing here\n"),
        ("/env.sock", EndpointSource::Env), ("/env.sock", EndpointSource::Env))]
    #[case::relative_flag_is_anchored_at_cwd(
        inputs(Some("m.sock"), None, None, None), None,
        ("/work/m.sock", EndpointSource::Flag), ("/work/m.sock", EndpointSource::Flag))]
    fn resolves_like_crictl(
        #[case] inputs: EndpointInputs,
        #[case] config: Option<&str>,
        #[case] runtime: (&str, EndpointSource),
        #[case] image: (&str, EndpointSource),
    ) {
        let resolved = resolve_endpoints(&inputs, |_| Ok(config.map(str::to_owned))).unwrap();
        assert_eq!(
            resolved,
            ResolvedEndpoints {
                runtime: unix(runtime.0),
                runtime_source: runtime.1,
                image: unix(image.0),
                image_source: image.1,
            }
        );
    }

    #[test]
    fn config_is_not_read_when_flags_name_both_endpoints() {
        let inputs = inputs(Some("/r.sock"), Some("/i.sock"), None, None);
        let resolved = resolve_endpoints(&inputs, |path| {
            Err(EndpointError::ConfigRead {
                path: path.to_path_buf(),
                source: io::Error::from(io::ErrorKind::PermissionDenied),
            })
        });
        assert_eq!(resolved.unwrap().image, unix("/i.sock"));
    }

    #[test]
    fn nothing_configured_lists_the_three_ways() {
        let err = resolve_endpoints(&inputs(None, None, None, None), |_| Ok(None)).unwrap_err();
        let message = err.to_string();
        for way in [
            "-r/--runtime-endpoint",
            RUNTIME_ENDPOINT_ENV,
            "runtime-endpoint in /etc/crictl.yaml",
        ] {
            assert!(message.contains(way), "{message}");
        }
    }

    #[rstest]
    #[case::flag(
        inputs(Some("npipe:///x"), None, None, None),
        None,
        "runtime endpoint from -r/--runtime-endpoint"
    )]
    #[case::env(
        inputs(None, None, Some("http://x"), None),
        None,
        "runtime endpoint from CONTAINER_RUNTIME_ENDPOINT"
    )]
    #[case::image_env(
        inputs(Some("/r.sock"), None, None, Some("tcp://x")),
        None,
        "image endpoint from IMAGE_SERVICE_ENDPOINT"
    )]
    #[case::config(
        inputs(None, None, None, None),
        Some("runtime-endpoint: tcp://h\n"),
        "runtime endpoint from runtime-endpoint in /etc/crictl.yaml"
    )]
    fn invalid_endpoint_names_where_it_came_from(
        #[case] inputs: EndpointInputs,
        #[case] config: Option<&str>,
        #[case] expected: &str,
    ) {
        let err = resolve_endpoints(&inputs, |_| Ok(config.map(str::to_owned))).unwrap_err();
        assert_eq!(err.to_string(), expected);
        assert!(matches!(err, EndpointError::Invalid { .. }), "{err:?}");
    }

    #[test]
    fn malformed_config_names_the_file() {
        let err = resolve_endpoints(&inputs(None, None, None, None), |_| {
            Ok(Some("runtime-endpoint: [unclosed\n".into()))
        })
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot parse crictl config /etc/crictl.yaml"
        );
    }

    #[rstest]
    #[case::empty("", None)]
    #[case::comments_only("# written by hand\n", None)]
    #[case::other_keys_ignored(
        "timeout: 2\ndebug: true\nruntime-endpoint: unix:///run/x.sock\n",
        Some("unix:///run/x.sock")
    )]
    fn crictl_configs_parse_like_crictl(#[case] text: &str, #[case] runtime: Option<&str>) {
        let config = parse_config(Path::new("/etc/crictl.yaml"), Some(text.to_owned())).unwrap();
        assert_eq!(config.runtime_endpoint.as_deref(), runtime);
        assert_eq!(config.image_endpoint, None);
    }

    #[test]
    fn missing_config_file_reads_as_no_config() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_crictl_config(&dir.path().join("crictl.yaml"))
            .unwrap()
            .is_none());
    }
}
