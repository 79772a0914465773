import ArgumentParser
import Foundation
import MBaaSBuiltins
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSPostgres
import Logging

/// `mbaas serve ncmb+http://KEY:CLIENT@127.0.0.1:8080` (or `mbaas serve --dialect ncmb …`): a local server that
/// speaks a vendor's wire dialect on the embedded store. The URL form starts the dialect registered for the URL's
/// scheme (``Builtins/dialects``), so a new dialect needs no change here.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a vendor's REST dialect on the embedded store (an emulator for apps, tests and migrations).",
        discussion: """
            Give the backend URL its clients will open, and the dialect registered for its scheme serves it at the \
            URL's host and port (no port: a free one, printed):

              mbaas serve ncmb+http://KEY:CLIENT@127.0.0.1:8080 [--data app.db]
              mbaas serve 'kii+http://APP_ID:CLIENT_SECRET@127.0.0.1:8081?clientID=ID'   (or APP_ID:APP_KEY, no admin)
              mbaas serve 'apppot+http://KEY@127.0.0.1:8082/apppot?company=24&app=ID&version=1.0' [--users users.json]
              mbaas serve 'parse+http://APP_ID:REST_KEY@127.0.0.1:1337/parse[?masterKey=M]'
              mbaas serve 'salesforce://CLIENT_ID:SECRET@127.0.0.1:8443' --tls-self-signed DIR --users users.json

            Served schemes: \(Builtins.dialects.schemes.map { "\($0)+http" }.joined(separator: ", ")). An unknown scheme, \
            a URL without its keys, or an https URL without the TLS flags below is a usage error (exit status 64); \
            the --dialect flags below stay, without a URL.

            HTTPS: --tls-cert FILE --tls-key FILE serve a PEM certificate chain and its PEM key, or \
            --tls-self-signed DIR writes a new CA and a server certificate for 127.0.0.1, ::1 and localhost into DIR \
            (ca.pem, server.pem, server-key.pem, the key mode 0600; the CA's key is not kept) and prints the CA \
            certificate's path for clients to trust (curl --cacert DIR/ca.pem). The printed URLs are then https \
            (scheme://… backend URLs). A missing or unreadable file exits 7; a file that is not PEM, or a key that \
            is not the certificate's, exits 2.

            Dialects: ncmb (NIFCLOUD mobile backend), kii (Kii Cloud), apppot (AppPot, server generation v2), parse \
            (Parse Server REST), salesforce (Salesforce REST and OAuth 2; clients hard-wire HTTPS).

              mbaas serve --dialect ncmb --application-key K --client-key C [--host 127.0.0.1] [--port 0] [--data app.db]
              mbaas serve --dialect kii --app-id ID --app-key K [--client-id ID --client-secret S] [--port 0]
              mbaas serve --dialect apppot --app-key K --company N --app-id ID [--app-version 1.0] [--users users.json]
              mbaas serve --dialect parse --app-id ID --rest-key K [--master-key M] [--mount /parse]
              mbaas serve --dialect salesforce --client-id ID --client-secret S [--users users.json] \
                [--token-lifetime 7200] --tls-self-signed DIR

            AppPot has no sign-up: --users names a JSON array of the company's users, \
            [{"username":"alice","password":"…","groups":["Sales"]}] (optional "id", "firstName", "lastName", \
            groups as names or {"groupId","groupName","roleName"}); without it the directory starts empty. \
            Salesforce has no sign-up either: --users names [{"username":"a@example.com","password":"…"}] \
            (optional "email", "firstName", "lastName").

            On start it prints the base URL and the backend URL other mbaas commands (and the MBaaSKit NCMB client) \
            take, e.g. ncmb+http://K:C@127.0.0.1:PORT; with --format json one JSON line \
            {"dialect","baseURL","backendURL","data","executor"} (and "caCertificate" with --tls-self-signed). Data lives in memory unless --data names a database file \
            (created mode 0600; the same file sqlite:PATH opens) or the URL of a store a server can run on \
            (sqlite:PATH, postgres://USER:PASSWORD@HOST:PORT/DB): several mbaas serve processes on one database are \
            one backend (docs/emulator.md, "Running the emulator in production"); a backend URL of a remote \
            service (pocketbase://, ncmb://…) is refused (exit status 64). The keys may come from MBAAS_NCMB_APPLICATION_KEY \
            and MBAAS_NCMB_CLIENT_KEY instead of the command line. It listens on loopback; another --host needs \
            --allow-remote (it speaks plain HTTP) and warns on start. A connection with no request under way is closed \
            after --idle-timeout seconds (30); a request still running after --request-timeout seconds (30; 0: none) is \
            cancelled and, once its work has stopped, answered with the dialect's timeout error (a write that completed \
            is answered as done; a statement PostgreSQL runs is not interrupted). It logs requests with --verbose (method, path, status; never headers or bodies), and stops on \
            Ctrl-C or SIGTERM (exit status 130 or 143 after a graceful shutdown).

            The emulator is MBaaSKit's own reading of each vendor: a pass against it proves consistency with that \
            reading, not with the vendor's closed service.
            """)

    enum Dialect: String, ExpressibleByArgument, CaseIterable { case ncmb, kii, apppot, parse, salesforce }

    @Argument(help: ArgumentHelp("The backend URL to serve, as clients open it (ncmb+http://KEY:CLIENT@127.0.0.1:8080); instead of --dialect and its flags.",
                                 valueName: "url"))
    var url: String?

    @Option(help: "The wire dialect: \(Dialect.allCases.map(\.rawValue).joined(separator: ", ")).")
    var dialect: Dialect?

    @Option(help: "The address to bind (default 127.0.0.1). An address beyond loopback needs --allow-remote.")
    var host = "127.0.0.1"

    @Flag(name: .customLong("allow-remote"), help: "Allow --host to be an address other machines reach (the server speaks plain HTTP: keys, tokens and data cross the network unencrypted).")
    var allowRemote = false

    @Option(name: .customLong("idle-timeout"), help: "Seconds a connection may stay open with no request under way (default 30).")
    var idleTimeout: Int = 30

    @Option(name: .customLong("request-timeout"), help: "Seconds one request may run before it is cancelled and answered with the dialect's timeout error once its work stops (default 30; 0: no deadline).")
    var requestTimeout: Double = 30

    @Option(help: "The port (default 0: a free port, printed on start).")
    var port = 0

    /// Where request handlers run (see ``EmulatorExecutor``). Read by `MBaaSCommand.main` before parsing, since it must
    /// be set before the first task starts; declared here so that it parses, shows in the help and is checked.
    enum Executor: String, ExpressibleByArgument, CaseIterable {
        case eventLoops = "event-loops", pool

        /// The value of `--executor` in the arguments of `mbaas serve …` (`nil` for another command); the default,
        /// event loops, when the option is absent. An unknown value is `nil`: the parser reports it.
        static func requested(in arguments: [String]) -> Executor? {
            guard arguments.dropFirst().first == "serve" else { return nil }
            var value: String?
            var iterator = arguments.dropFirst(2).makeIterator()
            while let argument = iterator.next(), argument != "--" {
                if argument == "--executor" { value = iterator.next() }
                else if argument.hasPrefix("--executor=") { value = String(argument.dropFirst("--executor=".count)) }
            }
            guard let value else { return .eventLoops }
            return Executor(rawValue: value)
        }
    }

    @Option(help: "Where request handlers run: event-loops (default: on the threads that serve the sockets, no hand-off per request) or pool (Swift's global concurrency pool).")
    var executor: Executor = .eventLoops

    @Option(help: "A database file, or a server store's URL (sqlite:PATH, postgres://…), to keep the data in (default: in memory, gone when the server stops).")
    var data: String?

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("Serve HTTPS with this PEM certificate chain (the server's certificate first; with --tls-key).", valueName: "file"))
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"))
    var tlsKey: String?

    @Option(name: .customLong("tls-self-signed"),
            help: ArgumentHelp("Serve HTTPS with a new CA and server certificate for 127.0.0.1/localhost written into this directory (prints the CA's path).",
                               valueName: "dir"))
    var tlsSelfSigned: String?

    @Option(name: .customLong("application-key"), help: "ncmb: the application key clients sign with (or MBAAS_NCMB_APPLICATION_KEY).")
    var applicationKey: String?

    @Option(name: .customLong("client-key"), help: "ncmb: the client key clients sign with (or MBAAS_NCMB_CLIENT_KEY).")
    var clientKey: String?

    @Option(name: .customLong("max-file-size"), help: "The largest file upload in bytes (default: the dialect's).")
    var maxFileSize: Int?

    @Option(name: .customLong("rest-key"), help: "parse: the REST API key (or MBAAS_PARSE_REST_KEY).")
    var restKey: String?

    @Option(name: .customLong("master-key"), help: "parse: the master key (or MBAAS_PARSE_MASTER_KEY); none by default.")
    var masterKey: String?

    @Option(help: "parse: the mount point (default /parse).")
    var mount: String?

    @Option(name: .customLong("app-id"), help: "kii, apppot, parse: the application id.")
    var appID: String?

    @Option(name: .customLong("app-key"), help: "kii, apppot: the application key.")
    var appKey: String?

    @Option(name: .customLong("client-id"), help: "kii: the app admin's client id (with --client-secret); salesforce: the connected app's consumer key.")
    var clientID: String?

    @Option(name: .customLong("client-secret"), help: "kii: the app admin's client secret; salesforce: the consumer secret.")
    var clientSecret: String?

    @Option(help: "apppot: the company number.")
    var company: Int?

    @Option(help: "apppot, salesforce: a JSON file of provisioned users (neither has sign-up).")
    var users: String?

    @Option(name: .customLong("token-lifetime"), help: "salesforce: seconds an access token lives (default 7200).")
    var tokenLifetime: Int?

    @Option(name: .customLong("app-version"), help: "apppot: the application version in the API path (default 1.0; the SDKs' configurations use e.g. 1.0.0).")
    var appVersion: String?

    enum PasswordCost: String, ExpressibleByArgument, CaseIterable { case light, strong }

    @Option(name: .customLong("password-cost"),
            help: "scrypt cost of new password hashes in the --data store (sqlite: or postgres://): light (fast, for throwaway data) or strong (default with --data; light in memory).")
    var passwordCost: PasswordCost?

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let maxFileSize, maxFileSize <= 0 { throw ValidationError("--max-file-size must be positive") }
        if let tokenLifetime, tokenLifetime <= 0 { throw ValidationError("--token-lifetime must be a positive number of seconds") }
        guard (1...86_400).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be between 1 and 86400 seconds") }
        guard requestTimeout == 0 || (0.01...86_400).contains(requestTimeout) else {
            throw ValidationError("--request-timeout must be 0 (no deadline) or between 0.01 and 86400 seconds, got \(requestTimeout)")
        }
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError(tlsCert == nil ? "--tls-key needs --tls-cert (the certificate it belongs to)" : "--tls-cert needs --tls-key (its private key)")
        }
        if tlsSelfSigned != nil && tlsCert != nil {
            throw ValidationError("give either --tls-self-signed or --tls-cert/--tls-key, not both")
        }
        let (host, _) = try address()
        if !EmulatorServer.isLoopback(host) && !allowRemote {
            throw ValidationError("--host \(host) is reachable beyond this machine, and the emulator speaks plain HTTP (keys, session tokens and data unencrypted); add --allow-remote to serve there anyway, or bind 127.0.0.1")
        }
    }

    /// The URL given, parsed; `nil` in the `--dialect` form. A URL together with `--dialect` or a dialect's own
    /// flags, or neither a URL nor `--dialect`, is a usage error.
    func servedURL() throws -> BackendURL? {
        guard let url else {
            guard dialect != nil else {
                throw ValidationError("give the backend URL to serve (e.g. mbaas serve ncmb+http://KEY:CLIENT@127.0.0.1:8080) or --dialect NAME with its flags")
            }
            return nil
        }
        if dialect != nil { throw ValidationError("give either a backend URL or --dialect, not both (the URL names the dialect)") }
        let flags: [(String, Bool)] = [
            ("--application-key", applicationKey != nil), ("--client-key", clientKey != nil), ("--rest-key", restKey != nil),
            ("--master-key", masterKey != nil), ("--mount", mount != nil), ("--app-id", appID != nil), ("--app-key", appKey != nil),
            ("--client-id", clientID != nil), ("--client-secret", clientSecret != nil), ("--company", company != nil),
            ("--app-version", appVersion != nil), ("--token-lifetime", tokenLifetime != nil),
        ]
        if let flag = flags.first(where: { $0.1 })?.0 {
            throw ValidationError("\(flag) is for the --dialect form; with a backend URL the keys and the rest come from the URL")
        }
        var parsed: BackendURL
        do { parsed = try BackendURL(parsing: url) } catch { throw ValidationError(MBaaSError.wrap(error).message) }
        // Over TLS the clients' URL is the https one (scheme://…); the dialect reads it as it reads scheme+http://….
        if usesTLS { parsed.isSecure = false }
        return parsed
    }

    /// The host and port to bind: the URL's (port 0 when it names none), or `--host` and `--port`. `--host` or
    /// `--port` that differ from the URL's are a usage error.
    func address() throws -> (host: String, port: Int) {
        guard let served = try servedURL() else { return (host, port) }
        guard let urlHost = served.host?.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), !urlHost.isEmpty else {
            throw ValidationError("the backend URL '\(served)' has no host to listen on (e.g. \(served.scheme)+http://…@127.0.0.1:8080)")
        }
        if host != "127.0.0.1" && host != urlHost { throw ValidationError("--host \(host) differs from the URL's host \(urlHost); the URL names the address") }
        let urlPort = served.port ?? 0
        if port != 0 && port != urlPort { throw ValidationError("--port \(port) differs from the URL's port \(urlPort); the URL names the address") }
        return (urlHost, urlPort)
    }

    /// Whether the server is to speak HTTPS (`--tls-cert` or `--tls-self-signed`).
    var usesTLS: Bool { tlsCert != nil || tlsSelfSigned != nil }

    /// The certificate to serve, read or written before the store opens: a bad file stops `serve` before anything
    /// listens.
    func loadTLS() throws(MBaaSError) -> EmulatorTLS? {
        if let tlsSelfSigned { return try EmulatorTLS.selfSigned(directory: tlsSelfSigned) }
        if let tlsCert, let tlsKey { return try EmulatorTLS.load(certificateFile: tlsCert, keyFile: tlsKey) }
        return nil
    }

    /// A dialect's plain-HTTP backend URL (`ncmb+http://…`) as its clients open it over TLS (`ncmb://…`).
    static func secured(_ backendURL: String) -> String {
        guard let range = backendURL.range(of: "+http://") else { return backendURL }
        return backendURL.replacingCharacters(in: range, with: "://")
    }

    func run() async throws {
        try await runReportingErrors { try await serve() }
    }

    func serve() async throws {
        let logger = global.logger
        let (host, port) = try address()
        let tls = try loadTLS()
        let store = try await openStore(logger: logger)
        let dialect: any EmulatorDialect
        do {
            dialect = try await makeDialect(store: store)
        } catch {
            await Self.close(store)
            throw error
        }
        if dialect.name == "salesforce", data != nil {
            Terminal.writeErr("mbaas serve: note: the Salesforce dialect keeps OAuth tokens and query cursors in this process: a restart ends every session, and another instance on the same --data does not accept this one's tokens (docs/emulator.md, \"Several instances, one database\")\n")
        }
        if !EmulatorServer.isLoopback(host) && tls == nil {
            Terminal.writeErr("mbaas serve: warning: listening on \(host) over plain HTTP (--allow-remote): anyone who can reach it sees keys, session tokens and data in the clear; put TLS in front of it\n")
        }
        let server = EmulatorServer(dialect: dialect, host: host, port: port, idleTimeout: .seconds(idleTimeout), tls: tls,
                                    requestTimeout: requestTimeout == 0 ? nil : .milliseconds(Int64((requestTimeout * 1000).rounded())),
                                    logger: logger)
        let format = global.resolvedFormat
        let data = self.data.map(BackendURL.redact)
        do {
            try await server.run { bound in
                let base = "\(server.scheme)://\(host.contains(":") ? "[\(host)]" : host):\(bound)"
                let plainURL = dialect.backendURL(host: host, port: bound)
                let backendURL = tls == nil ? plainURL : Self.secured(plainURL)
                let ca = tls?.caCertificatePath
                let line: String
                if format == .table {
                    line = "mbaas serve: \(dialect.name) dialect on \(base) (data: \(data ?? "in memory"))\nbackend URL: \(backendURL)\n"
                        + (ca.map { "CA certificate: \($0)\n" } ?? "")
                } else {
                    var o: JSONObject = ["dialect": .string(dialect.name), "baseURL": .string(base), "backendURL": .string(backendURL),
                                         "data": data.map(JSON.string) ?? .null,
                                         "executor": .string(EmulatorExecutor.isUsingEventLoops ? Executor.eventLoops.rawValue : Executor.pool.rawValue)]
                    if let ca { o["caCertificate"] = .string(ca) }
                    line = JSON.object(o).printed([.sortedKeys]) + "\n"
                }
                Terminal.writeOut(Data(line.utf8))
            }
        } catch where Task.isCancelled {
            // Stopped by Ctrl-C or SIGTERM: a normal end (the exit status says which signal).
        } catch {
            await Self.close(store)
            throw error
        }
        await Self.close(store)
    }

    /// The store `--data` names: in memory by default; a database file path, the Local store as before; or a
    /// backend URL (`SCHEME://…`, `sqlite:PATH`) opened through the built-in adapters, whose store must be able to
    /// serve (``ServerStore``: views per session, sessions and users in the store). A URL that does not parse, an
    /// unknown scheme or an adapter whose backend cannot serve (a client of a remote service) is a usage error
    /// (exit status 64) naming the problem; nothing is written.
    func openStore(logger: Logger) async throws -> any ServerStore {
        // --password-cost applies to whichever server store --data opens (sqlite: or postgres://).
        let hashing: ScryptPasswordHash.Parameters = switch passwordCost {
        case .light?: .light
        case .strong?: .default
        // Without the flag: $MBAAS_PASSWORD_COST when set, else light in memory and strong with --data.
        case nil: (try? BuiltinAdapters.passwordHashing()) ?? (data == nil ? .light : .default)
        }
        var options = LocalBackend.Options()
        options.passwordHashing = hashing
        guard let data, Self.namesBackendURL(data) else {
            return try LocalBackend(path: data ?? ":memory:", context: BackendContext(logger: logger), options: options)
        }
        let backend: any Backend
        do {
            backend = try await Builtins.registry(local: options, postgres: PostgresBackend.Options(passwordHashing: hashing, keepsConnectionsOpen: true)).open(try BackendURL(parsing: data), context: BackendContext(logger: logger))
        } catch let error as MBaaSError where error.kind == .invalidRequest {
            throw ValidationError("--data \(BackendURL.redact(data)): \(error.message)")
        }
        guard let store = backend as? any ServerStore else {
            await backend.close()
            throw ValidationError("--data \(BackendURL.redact(data)): the \(backend.adapterName) adapter is a client of a remote service, not a store the emulator can serve from; give a database file, sqlite:PATH or the URL of a server store (e.g. postgres://USER@HOST/DB)")
        }
        return store
    }

    /// Whether `--data` is a backend URL rather than a file path: it has `://` or starts with `sqlite:`.
    static func namesBackendURL(_ data: String) -> Bool { data.contains("://") || data.hasPrefix("sqlite:") }

    /// Closes the store (folding the write-ahead log into the database file) in a task of its own: the command's
    /// task is cancelled by Ctrl-C or SIGTERM, and GRDB refuses to start work in a cancelled task.
    static func close(_ store: any ServerStore) async {
        await Task { await store.close() }.value
    }

    /// The dialect asked for, on `store`: the one registered for the URL's scheme, or `--dialect` with its options,
    /// read in each dialect's own file (`ServeCommand+NCMB.swift`…). A URL the dialect refuses is a usage error.
    func makeDialect(store: any ServerStore) async throws -> any EmulatorDialect {
        if let served = try servedURL() {
            let options = DialectOptions(logger: global.logger, maxFileSize: maxFileSize, usersFile: users)
            do {
                return try await Builtins.dialects.makeDialect(url: served, store: store, options: options)
            } catch let error as MBaaSError where error.kind == .invalidRequest {
                throw ValidationError(error.message)
            }
        }
        guard let dialect else { throw ValidationError("give the backend URL to serve or --dialect NAME") }
        switch dialect {
        case .ncmb: return try ncmbDialect(store: store)
        case .kii: return try await kiiDialect(store: store)
        case .apppot: return try await appPotDialect(store: store)
        case .parse: return try parseDialect(store: store)
        case .salesforce: return try await salesforceDialect(store: store)
        }
    }
}
