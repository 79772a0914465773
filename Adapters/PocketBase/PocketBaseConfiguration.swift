import Foundation
public import MBaaSCore

/// How a ``PocketBaseBackend`` reaches its server and whom it acts as.
///
/// Built from a backend URL:
///
/// ```
/// pocketbase://admin%40example.com:PASSWORD@pb.example.com            superuser, HTTPS
/// pocketbase+http://admin%40example.com:PASSWORD@127.0.0.1:8090       superuser, plain HTTP (local servers)
/// pocketbase://alice:PASSWORD@pb.example.com?auth=users               an app user of the `users` collection
/// pocketbase://pb.example.com                                         anonymous
/// ```
///
/// Use `+http` only for loopback or local servers; everything else should be HTTPS. The user and password are
/// percent-encoded as in any URL (`admin%40example.com`). A path (`https://host/pb`) is kept as a prefix of every
/// API path, for servers behind a reverse proxy.
///
/// Options:
/// - `auth=superuser` (the default when credentials are given): the credentials are a superuser's (`_superusers`).
///   The adapter then manages the schema: it creates and extends collections, adds the `username` field to the
///   users collection and enables batch requests. Record calls still act as the logged-in app user, or as an
///   anonymous guest when nobody is logged in, so that access rules apply as they would in the app.
/// - `auth=<collection>` (e.g. `auth=users`): the credentials are an identity (user name or e-mail) and password of
///   that auth collection; the backend logs in as that user when opened. It cannot change the schema.
/// - `data=superuser`: record calls made without a logged-in user act as the superuser (rules bypassed, as in a
///   migration or an admin tool). Default `data=anonymous`.
/// - `users=<collection>`: the auth collection for sign-up and log-in, and the one ACL user ids refer to (default
///   `users`, or the `auth=` collection).
/// - `files=<collection>`: the collection that holds standalone uploads (default `mbaas_files`).
/// - `timeout=SECONDS`: how long each request may take (default: the transport's).
public struct PocketBaseConfiguration: Sendable, Hashable {
    /// Whom the credentials in the URL belong to.
    public enum Credentials: Sendable, Hashable {
        case none
        /// A superuser (`_superusers` collection): schema management.
        case superuser(email: String, password: String)
        /// An app user of an auth collection.
        case user(collection: String, identity: String, password: String)
    }

    /// `http(s)://host:port[/prefix]`, no trailing slash.
    public var baseURL: String
    public var credentials: Credentials
    public var usersCollection: String
    public var filesCollection: String
    /// Record calls without a session act as the superuser.
    public var dataAsSuperuser: Bool
    /// Seconds each request may take (URL option `timeout`); the transport's default when `nil`.
    public var timeout: Double?

    public init(
        baseURL: String, credentials: Credentials = .none, usersCollection: String = "users",
        filesCollection: String = "mbaas_files", dataAsSuperuser: Bool = false, timeout: Double? = nil
    ) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.credentials = credentials
        self.usersCollection = usersCollection
        self.filesCollection = filesCollection
        self.dataAsSuperuser = dataAsSuperuser
        self.timeout = timeout
    }

    /// The option names a URL may carry.
    public static let knownOptions: Set<String> = ["auth", "data", "users", "files", "timeout"]

    /// Reads a `pocketbase://` or `pocketbase+http://` URL; errors name the part that is wrong.
    public init(url: BackendURL) throws(MBaaSError) {
        guard url.scheme == "pocketbase" else {
            throw MBaaSError(.invalidRequest, "not a PocketBase URL (scheme '\(url.scheme)'; expected pocketbase:// or pocketbase+http://)")
        }
        guard url.host != nil else { throw MBaaSError(.invalidRequest, "PocketBase URL \(url) has no host") }
        try url.requireKnownOptions(Self.knownOptions, adapter: "PocketBase")
        var users = url.option("users") ?? "users"
        let files = url.option("files") ?? "mbaas_files"
        for (option, name) in [("users", users), ("files", files)] where !PocketBaseWire.isValidCollectionName(name) {
            throw MBaaSError(.invalidRequest, "PocketBase URL option \(option)='\(name)' is not a collection name ([A-Za-z0-9_]+)")
        }
        var dataAsSuperuser = false
        switch url.option("data") {
        case nil, "anonymous": break
        case "superuser": dataAsSuperuser = true
        case let other?:
            throw MBaaSError(.invalidRequest, "PocketBase URL option data='\(other)' must be 'anonymous' or 'superuser'")
        }
        let credentials: Credentials
        switch (url.user, url.secret) {
        case (nil, nil):
            credentials = .none
            if url.option("auth") != nil {
                throw MBaaSError(.invalidRequest, "PocketBase URL option auth= needs credentials (user:password@host)")
            }
        case (let user?, let secret?) where !user.isEmpty:
            let auth = url.option("auth") ?? "superuser"
            if auth == "superuser" || auth == "_superusers" {
                credentials = .superuser(email: user, password: secret)
            } else {
                guard PocketBaseWire.isValidCollectionName(auth) else {
                    throw MBaaSError(.invalidRequest, "PocketBase URL option auth='\(auth)' is not 'superuser' or an auth collection name")
                }
                credentials = .user(collection: auth, identity: user, password: secret)
                if url.option("users") == nil { users = auth }
            }
        default:
            throw MBaaSError(.invalidRequest, "PocketBase URL \(url) needs both a user and a password, or neither")
        }
        if dataAsSuperuser, case .superuser = credentials {} else if dataAsSuperuser {
            throw MBaaSError(.invalidRequest, "PocketBase URL option data=superuser needs superuser credentials")
        }
        var base = url.httpBase + url.path.split(separator: "/").map { percentEncode(String($0)) }.map { "/" + $0 }.joined()
        while base.hasSuffix("/") { base.removeLast() }
        self.init(baseURL: base, credentials: credentials, usersCollection: users, filesCollection: files,
                  dataAsSuperuser: dataAsSuperuser, timeout: try url.timeoutOption())
    }

    /// Whether the adapter may change the schema (superuser credentials).
    public var managesSchema: Bool {
        if case .superuser = credentials { return true }
        return false
    }
}
