public import Foundation
public import MBaaSCore

/// Runs scenarios against an adapter: live against a server, recording cassettes, or replaying them.
///
/// Every run of a scenario:
/// 1. opens the `main` backend instance and checks the scenario's `requires` against its
///    ``Backend/capabilities``: anything missing makes the scenario ``Outcome/skipped`` with the reason from
///    ``Capabilities/missing(_:)`` (never a pass);
/// 2. provides the scenario's fixture users and logs `main` in as its `actAs` user, except on a backend
///    without users (no `auth`), where a scenario that needs a user only to act as one runs anonymously
///    (``Scenario/runsAnonymously(on:)``);
/// 3. runs the steps in order (other instances named by `as` are opened on first use from the same factory,
///    URL and transport); the first unmet expectation is ``Outcome/failed`` with the difference, or
///    ``Outcome/lossy`` on a backend that declares one of the scenario's `lossyUnder` limits; an error the
///    step did not expect is ``Outcome/errored``;
/// 4. runs the cleanup whatever happened and closes every instance; a cleanup error other than `notFound` (the
///    steps may have deleted the record already) makes a passing scenario ``Outcome/errored``: a scenario whose
///    leftovers cannot be removed did not run cleanly.
public enum ConformanceRunner {
    /// A fresh `${run}` value: 8 lowercase alphanumerics, starting with a letter.
    public static func makeRunID() -> String {
        var rng = SystemRandomNumberGenerator()
        return makeRunID(using: &rng)
    }

    /// A `${run}` value from the given generator (tests pass a seeded one).
    public static func makeRunID<G: RandomNumberGenerator>(using rng: inout G) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        let alphanumerics = letters + Array("0123456789")
        var id = String(letters.randomElement(using: &rng)!)
        for _ in 1..<8 { id.append(alphanumerics.randomElement(using: &rng)!) }
        return id
    }

    // MARK: Live

    /// Runs scenarios live against one server URL, each scenario with fresh backend instances and its own
    /// `${run}`. Nothing is written. A result's ``Fixture`` is `live`, or `simulated` when MBaaSKit's emulator
    /// answered (it names itself on every response: `mbaas serve` is not the vendor).
    public static func live(
        adapter: String, factory: any BackendFactory, url: BackendURL,
        transport: any HTTPTransport = URLSessionTransport(), clock: (@Sendable () -> Date)? = nil,
        fixtureUsers: [String: FixtureUser] = [:], scenarios: [Scenario]
    ) async -> [ScenarioResult] {
        let context = BackendContext(transport: transport, clock: clock ?? { Date() })
        return await live(adapter: adapter, factory: factory, scenarios: scenarios, context: context,
                          fixtureUsers: fixtureUsers) { _ in url }
    }

    /// Runs scenarios live, asking for a URL per scenario: a backend without a shared server (an embedded
    /// database) gets a fresh database for each scenario this way, while the instances of one scenario
    /// (`main`, `alice`...) share it.
    public static func live(
        adapter: String, factory: any BackendFactory, scenarios: [Scenario],
        context: BackendContext = BackendContext(), fixtureUsers: [String: FixtureUser] = [:],
        url: @escaping @Sendable (Scenario) throws -> BackendURL
    ) async -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        // What answered is measured: a scenario MBaaSKit's emulator answered is simulated evidence, not live.
        let watcher = ServerWatchingTransport(wrapping: context.transport)
        var watching = context
        watching.transport = watcher
        let watchedContext = watching
        for scenario in scenarios {
            let started = ProcessInfo.processInfo.systemUptime
            watcher.reset()
            let scenarioURL: BackendURL
            do { scenarioURL = try url(scenario) } catch {
                results.append(ScenarioResult(adapter: adapter, scenario: scenario.id, outcome: .errored,
                                              reason: "no backend URL: \(MBaaSError.wrap(error))"))
                continue
            }
            if let reason = urlProblem(scenarioURL, factory: factory) {
                results.append(ScenarioResult(adapter: adapter, scenario: scenario.id, outcome: .errored, reason: reason))
                continue
            }
            let execution = await execute(scenario, variables: ["run": makeRunID()], fixtureUsers: fixtureUsers) {
                try await factory.open(scenarioURL, context: watchedContext)
            }
            let answeredBy: Fixture = watcher.sawEmulator ? .simulated : .live
            results.append(execution.result(adapter: adapter, since: started, fixture: scenario.network ? answeredBy : .none))
        }
        return results
    }

    /// Why `url` may not be used for conformance (the factory refuses its form, or it carries an administrative
    /// option), or `nil`.
    static func urlProblem(_ url: BackendURL, factory: any BackendFactory) -> String? {
        do throws(MBaaSError) { try factory.checkURLForm(url) } catch { return error.message }
        return administrativeOption(in: url, factory: factory)
    }

    /// Why `url` may not be used for conformance (it carries an administrative option), or `nil`.
    static func administrativeOption(in url: BackendURL, factory: any BackendFactory) -> String? {
        guard let admin = factory.administrativeOptions.sorted().first(where: { url.option($0) != nil }) else { return nil }
        return "the backend URL carries the administrative option '\(admin)': conformance runs as the app's users, never as an admin (drop it)"
    }

    // MARK: The core

    /// Runs one scenario with backend instances from `open` (called once per instance name).
    ///
    /// - Parameter fixtureUsers: users that exist on the server, by the names scenarios give them (`users`);
    ///   a fixture user not given is signed up when the backend can (see ``FixtureUser/generated(_:run:)``).
    static func execute(
        _ scenario: Scenario, variables: [String: String], fixtureUsers: [String: FixtureUser] = [:],
        setupDone: () -> Void = {},
        open: @escaping @Sendable () async throws -> any Backend
    ) async -> ScenarioExecution {
        var pool = BackendPool(open: open)
        let main: any Backend
        do { main = try await pool.backend("main") } catch {
            return ScenarioExecution(scenario: scenario, outcome: .errored,
                                     reason: "cannot open the backend: \(MBaaSError.wrap(error))")
        }
        if let missing = main.capabilities.missing(scenario.requires) {
            await pool.closeAll()
            return ScenarioExecution(scenario: scenario, outcome: .skipped, reason: missing)
        }
        let declared = scenario.unless.filter { main.capabilities.missing([$0]) == nil }
        if !declared.isEmpty {
            await pool.closeAll()
            return ScenarioExecution(
                scenario: scenario, outcome: .skipped,
                reason: "declares capability \(declared.map { "'\($0.rawValue)'" }.joined(separator: ", ")): the scenario runs only where that is missing (the scenarios requiring it test it)")
        }
        var vars = variables.mapValues(JSON.string)
        let anonymous = scenario.runsAnonymously(on: main.capabilities)
        for name in scenario.users where !anonymous {
            let user: FixtureUser
            if let given = fixtureUsers[name] {
                user = given
            } else if main.capabilities.missing([.signUp]) == nil {
                user = FixtureUser.generated(name, run: variables["run"] ?? "")
            } else {
                await pool.closeAll()
                return ScenarioExecution(
                    scenario: scenario, outcome: .errored,
                    reason: "fixture user '\(name)' is needed: the backend cannot sign up users, so name an existing one (fixtureUsers:, or mbaas conformance --fixture-user \(name)=USERNAME)")
            }
            do {
                let setup = try await pool.backend("fixture " + name)
                func provide() async throws -> Session {
                    user.signUp
                        ? try await setup.signUp(username: user.username, password: user.password, email: nil, fields: [:])
                        : try await setup.logIn(username: user.username, password: user.password)
                }
                // Provisioning is setup, not a measured step (the auth scenarios test sign-up and log-in): a
                // failure other than `duplicate` (a server busy with parallel tests) is retried once.
                let session: Session
                do { session = try await provide() } catch let e as MBaaSError where e.kind != .duplicate && e.kind != .unauthorized {
                    try await Task.sleep(nanoseconds: 300_000_000)
                    session = try await provide()
                }
                try await setup.logOut(confirmWithServer: false)
                vars[name + "_username"] = .string(user.username)
                vars[name + "_password"] = .string(user.password)
                vars[name + "_id"] = .string(session.userId)
            } catch {
                await pool.closeAll()
                return ScenarioExecution(
                    scenario: scenario, outcome: .errored,
                    reason: "cannot provide fixture user '\(name)' (\(user.signUp ? "sign up" : "log in") \(user.username)): \(MBaaSError.wrap(error))")
            }
        }
        if !anonymous, let name = scenario.actAs, case .string(let username)? = vars[name + "_username"],
           case .string(let password)? = vars[name + "_password"] {
            do { _ = try await main.logIn(username: username, password: password) } catch {
                await pool.closeAll()
                return ScenarioExecution(scenario: scenario, outcome: .errored,
                                         reason: "cannot act as fixture user '\(name)': \(MBaaSError.wrap(error))")
            }
        }
        setupDone()
        var interpreter = StepInterpreter(pool: pool, variables: vars)
        var outcome = Outcome.passed
        var reason: String?
        for (i, step) in scenario.steps.enumerated() {
            do {
                try await interpreter.run(step, label: label(step, "step \(i + 1)"))
            } catch {
                switch error {
                case .failed(let message):
                    let limits = scenario.lossyUnder.filter { main.capabilities.has($0) }
                    if let limit = limits.first {
                        outcome = .lossy
                        reason = "known loss under declared '\(limit.rawValue)'"
                            + (main.capabilities.note(for: limit).map { " (\($0))" } ?? "") + ": " + message
                    } else {
                        outcome = .failed
                        reason = message
                    }
                case .errored(let message): outcome = .errored; reason = message
                }
                break
            }
        }
        var cleanupErrors: [String] = []
        for (i, step) in scenario.cleanup.enumerated() {
            // A step naming a variable that was never captured has nothing to clean up.
            let refs = Template.references(in: .object(step.arguments))
            guard refs.isSubset(of: Set(interpreter.variables.keys)) else { continue }
            // A backend that cannot delete files as this caller keeps them (Parse Server without its master key).
            if step.operation == .deleteFile, !main.capabilities.has(.fileDelete) { continue }
            do { try await interpreter.run(step, label: label(step, "cleanup \(i + 1)"), tolerating: [.notFound]) } catch {
                switch error {
                case .failed(let m), .errored(let m): cleanupErrors.append(m)
                }
            }
        }
        await interpreter.pool.closeAll()
        if outcome == .passed || outcome == .lossy, !cleanupErrors.isEmpty {
            outcome = .errored
            reason = "cleanup failed: " + cleanupErrors.joined(separator: "; ")
        }
        return ScenarioExecution(scenario: scenario, outcome: outcome, reason: reason,
                                 variables: interpreter.variables, cleanupErrors: cleanupErrors)
    }

    private static func label(_ step: Step, _ position: String) -> String {
        "\(position) `\(step.operation.rawValue)`" + (step.session == "main" ? "" : " as \(step.session)")
    }
}

/// A user that a scenario's `users` names: one that exists on the server (given by the caller), or one the
/// runner signs up before the steps.
public struct FixtureUser: Sendable, Hashable {
    public var username: String
    public var password: String
    /// Whether the runner signs the user up (`true`) or logs it in (an existing user).
    public var signUp: Bool

    /// An existing user (e.g. from a directory an administrator keeps), logged in once to learn its id.
    public init(username: String, password: String) {
        self.init(username: username, password: password, signUp: false)
    }

    init(username: String, password: String, signUp: Bool) {
        self.username = username
        self.password = password
        self.signUp = signUp
    }

    /// The user the runner signs up for `name` on a backend that can sign up: `f<run><name>` with a password
    /// derived from the run, so a replay can compute it again.
    public static func generated(_ name: String, run: String) -> FixtureUser {
        FixtureUser(username: "f\(run)\(name.lowercased())", password: "Fx-\(run)-\(name)-pw1", signUp: true)
    }

    /// The placeholder a cassette carries instead of the password of fixture user `name`.
    public static func passwordPlaceholder(_ name: String) -> String { "<FIXTURE_PASSWORD_\(name.uppercased())>" }
}

/// The outcome of one scenario run, with what the harness needs afterwards.
struct ScenarioExecution: Sendable {
    var scenario: Scenario
    var outcome: Outcome
    var reason: String?
    var variables: [String: JSON] = [:]
    /// Errors of the cleanup steps (a passing scenario with any is errored).
    var cleanupErrors: [String] = []

    /// The result; a skip never carries evidence (``Fixture/none``).
    func result(adapter: String, since started: TimeInterval, fixture: Fixture) -> ScenarioResult {
        ScenarioResult(adapter: adapter, scenario: scenario.id, outcome: outcome, reason: reason,
                       durationMs: max(0, Int(((ProcessInfo.processInfo.systemUptime - started) * 1000).rounded())),
                       fixture: outcome == .skipped ? .none : fixture)
    }
}
