import ArgumentParser
import Foundation
import MBaaSCore

/// `mbaas auth signup|login|logout|whoami`. Sessions are saved in the session file (mode 0600) per backend URL;
/// tokens are never printed.
struct AuthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "auth", abstract: "Sign up, log in and out; later commands on the same URL act as that user.",
        subcommands: [SignUp.self, LogIn.self, LogOut.self, WhoAmI.self])

    /// `--password P` or `--password-stdin`.
    struct PasswordOptions: ParsableArguments {
        @Option(help: "The password (visible to other local users in the process list; prefer --password-stdin)")
        var password: String?
        @Flag(name: .customLong("password-stdin"), help: "Read the password from the first line of stdin")
        var passwordStdin = false

        func validate() throws {
            if password != nil && passwordStdin { throw ValidationError("use either --password or --password-stdin") }
            if password == nil && !passwordStdin { throw ValidationError("a password is needed: --password P or --password-stdin") }
        }

        func read() throws(MBaaSError) -> String {
            if let password { return password }
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw MBaaSError(.invalidRequest, "--password-stdin: no password on stdin")
            }
            return line
        }
    }

    struct SignUp: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "signup", abstract: "Create a user and log in as it.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Argument(help: "User name") var username: String
        @OptionGroup var password: PasswordOptions
        @Option(help: "E-mail address") var email: String?
        @Option(help: "Extra user fields as a neutral JSON object") var fields: String?

        func run() async throws {
            try await runReportingErrors {
                try refuseEphemeralSession(url, global)
                let secret = try password.read()
                let extra = try fields.map { text throws(MBaaSError) in try Record.fields(fromJSONText: readArgument(text, name: "--fields")) } ?? [:]
                let opened = try await OpenedBackend.open(url, global)
                let session: Session
                do {
                    session = try await opened.backend.signUp(username: username, password: secret, email: email, fields: extra)
                } catch {
                    try? await opened.finish()
                    throw error
                }
                do {
                    try await opened.finish()
                } catch {
                    // The account exists now: say so, so that a retry is a login, not a second sign-up (duplicate).
                    await opened.backend.close()
                    let e = MBaaSError.wrap(error)
                    throw MBaaSError(e.kind, "the account '\(username)' was created (user id \(session.userId)), but its session could not be saved: \(e.message); log in with `mbaas auth login` once the session file can be written")
                }
                emit(sessionJSON(session), table: sessionTable(session, verb: "signed up and logged in"), format: global.resolvedFormat)
            }
        }
    }

    struct LogIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "login", abstract: "Log in; the session is saved for this URL.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Argument(help: "User name") var username: String
        @OptionGroup var password: PasswordOptions

        func run() async throws {
            try await runReportingErrors {
                try refuseEphemeralSession(url, global)
                let secret = try password.read()
                let session = try await OpenedBackend.with(url, global, access: .write) { try await $0.logIn(username: username, password: secret) }
                emit(sessionJSON(session), table: sessionTable(session, verb: "logged in"), format: global.resolvedFormat)
            }
        }
    }

    struct LogOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "logout", abstract: "Forget the saved session of this URL.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Flag(help: "Fail unless the server confirms it ended the session (it is forgotten locally anyway). The embedded sqlite: store always revokes the token.")
        var server = false

        func run() async throws {
            try await runReportingErrors {
                let wasLoggedIn = try await OpenedBackend.with(url, global, access: .write) { backend in
                    let had = await backend.session != nil
                    try await backend.logOut(confirmWithServer: server)
                    return had
                }
                emit(.object(["loggedOut": .bool(wasLoggedIn)]), table: wasLoggedIn ? "logged out" : "was not logged in",
                     format: global.resolvedFormat)
            }
        }
    }

    struct WhoAmI: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "whoami", abstract: "Show the logged-in user.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String

        func run() async throws {
            try await runReportingErrors {
                let user = try await OpenedBackend.with(url, global, access: .read) { try await $0.currentUser() }
                var pairs: [(String, String)] = [("id", user.id), ("username", user.username ?? "")]
                if let email = user.email { pairs.append(("email", email)) }
                if !user.roles.isEmpty { pairs.append(("roles", user.roles.joined(separator: ", "))) }
                if !user.groups.isEmpty { pairs.append(("groups", user.groups.joined(separator: ", "))) }
                for k in user.fields.keys.sorted() { pairs.append((k, display(user.fields[k]))) }
                emit(user.json, table: TextTable.keyValue(pairs), format: global.resolvedFormat)
            }
        }
    }
}

/// `sqlite::memory:` is a private database that ends with the command: a session there could never be used
/// again, so signing up or logging in is refused instead of saving a session that is dead on arrival.
func refuseEphemeralSession(_ argument: String, _ options: GlobalOptions) throws(MBaaSError) {
    let url = try BackendURL(parsing: try resolveBackendURL(argument, options))
    if url.scheme == "sqlite", url.path == ":memory:" {
        throw MBaaSError(.invalidRequest, "sqlite::memory: is a private database that ends with this command; a session there cannot be used later (use a file: sqlite:app.db)")
    }
}

/// A session without its tokens.
func sessionJSON(_ s: Session) -> JSON {
    var o: JSONObject = ["userId": .string(s.userId)]
    if let u = s.username { o["username"] = .string(u) }
    if let e = s.expiresAt { o["expiresAt"] = .string(ISO8601.format(e)) }
    return .object(o)
}

func sessionTable(_ s: Session, verb: String) -> String {
    "\(verb) as \(s.username ?? s.userId) (user id \(s.userId))" + (s.expiresAt.map { "; session expires \(ISO8601.format($0))" } ?? "")
}
