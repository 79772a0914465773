public import MBaaSCore

/// Where and how a ``KiiBackend`` talks to Kii Cloud.
///
/// # Backend URL
/// ```
/// kii://APP_ID:APP_KEY@api-jp.kii.com          the JP site (any Kii API host works: api.kii.com, api-sg.kii.com...)
/// kii://APP_ID:APP_KEY@jp                      site shorthand: us, jp, sg, eu, cn3 (kii.md §1.1)
/// kii+http://APP_ID:APP_KEY@127.0.0.1:8080     a local server or emulator over plain HTTP
/// ```
/// The REST base is `{http(s)}://{host}[:port]{path}` where the path defaults to `/api`. `APP_KEY` may be left out
/// (Kii no longer checks it, kii.md §1.2; the app ID is sent in its place). Options (query string):
/// - `filesBucket=NAME`: the app-scope bucket holding standalone files (default `mbaas_files`; Kii bucket names may
///   not start with `_`, kii.md §3.1).
/// - `dataType=NAME`: the data type of created objects, sent as `application/vnd.{appID}.{NAME}+json`
///   (default `mydata`, kii.md §3.2).
/// - `timeout=SECONDS`: how long each request may take (default: the transport's).
/// - `clientID=CLIENT_ID`: **admin mode**. The URL's secret is then the app's ClientSecret (not an app key), and
///   calls made without a user session use the app admin token (`{client_id, client_secret}` on
///   `/api/oauth2/token`, as the JS SDK and python3-kii ask for it; kii.md §2.1) instead of acting anonymously. Kii lets anonymous callers only read and query app-scope buckets (creating objects needs
///   an authenticated user, docs.kii.com "Bucket Access Control"), so server-side tools such as a migration use
///   this mode: `kii://APP_ID:CLIENT_SECRET@api-jp.kii.com?clientID=CLIENT_ID`. A user session, once logged in,
///   still takes precedence.
public struct KiiConfiguration: Sendable, Hashable {
    public var appID: String
    public var appKey: String
    /// The REST base, e.g. `https://api-jp.kii.com/api`.
    public var baseURL: String
    public var filesBucket: String
    public var dataType: String
    /// Admin mode: the ClientID and ClientSecret used for calls without a user session.
    public var adminCredentials: AdminCredentials?
    /// Seconds each request may take (URL option `timeout`); the transport's default when `nil`.
    public var timeout: Double?

    /// The app admin's client credentials (kii.md §2.1).
    public struct AdminCredentials: Sendable, Hashable {
        public var clientID: String
        public var clientSecret: String
        public init(clientID: String, clientSecret: String) {
            self.clientID = clientID
            self.clientSecret = clientSecret
        }
    }

    /// Kii's site hosts (kii.md §1.1).
    public static let sites: [String: String] = [
        "us": "api.kii.com", "jp": "api-jp.kii.com", "sg": "api-sg.kii.com", "eu": "api-eu.kii.com",
        "cn3": "api-cn3.kii.com", "cn": "api-cn3.kii.com",
    ]

    public init(
        appID: String, appKey: String? = nil, baseURL: String = "https://api-jp.kii.com/api", filesBucket: String = "mbaas_files",
        dataType: String = "mydata", adminCredentials: AdminCredentials? = nil, timeout: Double? = nil
    ) {
        self.appID = appID
        self.appKey = appKey ?? appID
        self.baseURL = baseURL
        self.filesBucket = filesBucket
        self.dataType = dataType
        self.adminCredentials = adminCredentials
        self.timeout = timeout
    }

    /// Reads a `kii://` or `kii+http://` backend URL; errors name the part that is wrong.
    public init(url: BackendURL) throws(MBaaSError) {
        guard url.scheme == "kii" else {
            throw MBaaSError(.invalidRequest, "not a Kii URL (scheme '\(url.scheme)'); use kii://APP_ID:APP_KEY@api-jp.kii.com")
        }
        guard let appID = url.user, !appID.isEmpty else {
            throw MBaaSError(.invalidRequest, "Kii URL \(url) has no app ID; use kii://APP_ID:APP_KEY@api-jp.kii.com")
        }
        guard var host = url.host, !host.isEmpty else { throw MBaaSError(.invalidRequest, "Kii URL \(url) has no host") }
        if let siteHost = KiiConfiguration.sites[host.lowercased()] { host = siteHost }
        var base = BackendURL(scheme: "kii", isSecure: url.isSecure, host: host, port: url.port).httpBase
        base += url.path.isEmpty || url.path == "/" ? "/api" : (url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path)
        let known: Set<String> = ["filesBucket", "dataType", "clientID", "timeout"]
        try url.requireKnownOptions(known, adapter: "Kii")
        let files = url.option("filesBucket") ?? "mbaas_files"
        if let problem = KiiBucketAddress.problem(withBucketName: files) {
            throw MBaaSError(.invalidRequest, "Kii URL option filesBucket: \(problem)")
        }
        let dataType = url.option("dataType") ?? "mydata"
        guard !dataType.isEmpty, dataType.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) else {
            throw MBaaSError(.invalidRequest, "Kii URL option dataType '\(dataType)' must be letters, digits, - _ .")
        }
        let secret = url.secret.flatMap { $0.isEmpty ? nil : $0 }
        var admin: AdminCredentials?
        if let clientID = url.option("clientID") {
            guard !clientID.isEmpty, let secret else {
                throw MBaaSError(.invalidRequest, "Kii admin mode needs the ClientSecret as the URL's secret: kii://APP_ID:CLIENT_SECRET@host?clientID=CLIENT_ID")
            }
            admin = AdminCredentials(clientID: clientID, clientSecret: secret)
        }
        // In admin mode the secret is the ClientSecret; it is never sent as the app key. Kii no longer checks the app
        // key (kii.md §1.2), so the app ID stands in when there is none.
        self.init(appID: appID, appKey: admin == nil ? (secret ?? appID) : appID, baseURL: base, filesBucket: files,
                  dataType: dataType, adminCredentials: admin, timeout: try url.timeoutOption())
    }
}
