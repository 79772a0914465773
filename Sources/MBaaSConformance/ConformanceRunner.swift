import Foundation
import MBaaSCore

/// Runs scenarios against an adapter: live against a server, recording cassettes, or replaying them.
///
/// Every run of a scenario:
/// 1. opens the `main` backend instance and checks the scenario's `requires` against its
///    ``Backend/capabilities``: anything missing makes the scenario ``Outcome/skipped`` with the reason from
///    ``Capabilities/missing(_:)`` (never a pass);
/// 2. runs the steps in order (other instances named by `as` are opened on first use from the same factory,
///    URL and transport); the first unmet expectation is ``Outcome/failed`` with the difference, an error the
///    step did not expect is ``Outcome/errored``;
/// 3. runs the cleanup whatever happened, ignoring its errors, and closes every instance.
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
    /// `${run}`. Nothing is written.
    public static func live(
        adapter: String, factory: any BackendFactory, url: BackendURL,
        transport: any HTTPTransport = URLSessionTransport(), clock: (@Sendable () -> Date)? = nil,
        scenarios: [Scenario]
    ) async -> [ScenarioResult] {
        let context = BackendContext(transport: transport, clock: clock ?? { Date() })
        return await live(adapter: adapter, factory: factory, scenarios: scenarios, context: context) { _ in url }
    }

    /// Runs scenarios live, asking for a URL per scenario: a backend without a shared server (an embedded
    /// database) gets a fresh database for each scenario this way, while the instances of one scenario
    /// (`main`, `alice`...) share it.
    public static func live(
        adapter: String, factory: any BackendFactory, scenarios: [Scenario],
        context: BackendContext = BackendContext(),
        url: @escaping @Sendable (Scenario) throws -> BackendURL
    ) async -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        for scenario in scenarios {
            let started = ProcessInfo.processInfo.systemUptime
            let scenarioURL: BackendURL
            do { scenarioURL = try url(scenario) } catch {
                results.append(ScenarioResult(adapter: adapter, scenario: scenario.id, outcome: .errored,
                                              reason: "no backend URL: \(MBaaSError.wrap(error))"))
                continue
            }
            let execution = await execute(scenario, variables: ["run": makeRunID()]) {
                try await factory.open(scenarioURL, context: context)
            }
            results.append(execution.result(adapter: adapter, since: started))
        }
        return results
    }

    // MARK: The core

    /// Runs one scenario with backend instances from `open` (called once per instance name).
    static func execute(
        _ scenario: Scenario, variables: [String: String],
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
        var interpreter = StepInterpreter(pool: pool, variables: variables.mapValues(JSON.string))
        var outcome = Outcome.passed
        var reason: String?
        for (i, step) in scenario.steps.enumerated() {
            do {
                try await interpreter.run(step, label: label(step, "step \(i + 1)"))
            } catch {
                switch error {
                case .failed(let message): outcome = .failed; reason = message
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
            do { try await interpreter.run(step, label: label(step, "cleanup \(i + 1)")) } catch {
                switch error {
                case .failed(let m), .errored(let m): cleanupErrors.append(m)
                }
            }
        }
        await interpreter.pool.closeAll()
        return ScenarioExecution(scenario: scenario, outcome: outcome, reason: reason,
                                 variables: interpreter.variables, cleanupErrors: cleanupErrors)
    }

    private static func label(_ step: Step, _ position: String) -> String {
        "\(position) `\(step.operation.rawValue)`" + (step.session == "main" ? "" : " as \(step.session)")
    }
}

/// The outcome of one scenario run, with what the harness needs afterwards.
struct ScenarioExecution: Sendable {
    var scenario: Scenario
    var outcome: Outcome
    var reason: String?
    var variables: [String: JSON] = [:]
    /// Errors the cleanup ignored (shown only when diagnosing cassettes).
    var cleanupErrors: [String] = []

    func result(adapter: String, since started: TimeInterval) -> ScenarioResult {
        ScenarioResult(adapter: adapter, scenario: scenario.id, outcome: outcome, reason: reason,
                       durationMs: max(0, Int(((ProcessInfo.processInfo.systemUptime - started) * 1000).rounded())))
    }
}
