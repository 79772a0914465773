public import Foundation
public import MBaaSCore
public import MBaaSReplay

extension ConformanceRunner {
    // MARK: Replay

    /// Replays each scenario from `<cassettes>/<scenario-id>.json`.
    ///
    /// For each scenario the cassette's `variables.run` becomes `${run}`; the backend is opened from the
    /// cassette's `backendURL` (placeholders replaced) with a strict ``ReplayingTransport`` that ignores the volatile
    /// headers of the factory's ``BackendFactory/wireProfile``, and a clock pinned to
    /// `recordedAt`; every instance a scenario names (`as`) shares that transport. A pass also needs every
    /// recorded interaction to have been used, and any request that matched no recorded interaction makes the
    /// scenario errored, even when the adapter swallowed the error the replay threw. Each result's ``Fixture``
    /// comes from the cassette's provenance (`recorded` from a vendor's server; `simulated` from the emulator and
    /// `authored` by a simulator: both `simulated`);
    /// a scenario whose steps sent no request (after any fixture-user sign-up and log-in) is ``Fixture/none``. A cassette whose
    /// backend URL carries one of the factory's ``BackendFactory/administrativeOptions`` is refused (errored). A scenario whose required capabilities the adapter lacks is
    /// skipped, cassette or not (capabilities are probed from a backend opened without a network); a runnable
    /// scenario without a cassette is errored.
    ///
    /// - Parameter substitutions: placeholder values for the cassettes (`["<APPLICATION_KEY>": "..."]`); unnamed
    ///   placeholders get dummy values, which is what replays normally want.
    public static func replay(
        adapter: String, factory: any BackendFactory, cassettes: URL, scenarios: [Scenario],
        substitutions: [String: String] = [:]
    ) async -> [ScenarioResult] {
        var probe = CapabilityProbe(factory: factory, cassettes: cassettes)
        var results: [ScenarioResult] = []
        for scenario in scenarios {
            let started = ProcessInfo.processInfo.systemUptime
            let file = cassettes.appendingPathComponent(scenario.id + ".json")
            guard FileManager.default.fileExists(atPath: file.path) else {
                let outcome: Outcome
                let reason: String
                switch await probe.capabilities() {
                case .success(let caps):
                    let declared = scenario.unless.filter { caps.has($0) }
                    if let missing = caps.missing(scenario.requires) {
                        (outcome, reason) = (.skipped, missing)
                    } else if !declared.isEmpty {
                        (outcome, reason) = (.skipped, "declares capability \(declared.map { "'\($0.rawValue)'" }.joined(separator: ", ")): the scenario runs only where that is missing (the scenarios requiring it test it)")
                    } else {
                        (outcome, reason) = (.errored, "no cassette \(adapter)/\(scenario.id).json (record one live with `mbaas conformance --mode live --backend URL --record --scenario \(scenario.id)`, or author it)")
                    }
                case .failure(let error):
                    (outcome, reason) = (.errored, "no cassette \(adapter)/\(scenario.id).json, and capabilities could not be probed: \(error)")
                }
                results.append(ScenarioResult(adapter: adapter, scenario: scenario.id, outcome: outcome, reason: reason,
                                              durationMs: elapsed(since: started)))
                continue
            }
            let (execution, fixture) = await replay(scenario, adapter: adapter, factory: factory, cassette: file,
                                                    substitutions: substitutions)
            results.append(execution.result(adapter: adapter, since: started, fixture: fixture))
        }
        return results
    }

    /// Replays one scenario from one cassette file.
    static func replay(
        _ scenario: Scenario, adapter: String, factory: any BackendFactory, cassette file: URL,
        substitutions: [String: String]
    ) async -> (ScenarioExecution, Fixture) {
        func errored(_ reason: String) -> (ScenarioExecution, Fixture) {
            (ScenarioExecution(scenario: scenario, outcome: .errored, reason: reason), .none)
        }
        let raw: Cassette
        do { raw = try Cassette(json: JSON.parse(Data(contentsOf: file))) } catch {
            return errored("unusable cassette \(file.lastPathComponent): \(MBaaSError.wrap(error))")
        }
        guard raw.name == scenario.id else {
            return errored("cassette \(file.lastPathComponent) is named '\(raw.name)', not '\(scenario.id)'")
        }
        guard let run = raw.variables["run"] else {
            return errored("cassette \(file.lastPathComponent) has no variables.run")
        }
        var table = substitutions
        for (placeholder, value) in scenarioSecrets(scenario, run: run) where table[placeholder] == nil {
            table[placeholder] = value
        }
        // Fixture users: a generated one is signed up again with its derived password; a given one logs in with
        // the password the caller substitutes, else the placeholder's dummy (which the cassette carries too).
        table = Dictionary(table.map { (Cassette.normalizedPlaceholder($0.key), $0.value) }) { a, _ in a }
        var fixtureUsers: [String: FixtureUser] = [:]
        for name in scenario.users {
            let generated = FixtureUser.generated(name, run: run)
            let placeholder = FixtureUser.passwordPlaceholder(name)
            let username = raw.variables[name + "_username"] ?? generated.username
            if username == generated.username {
                fixtureUsers[name] = generated
                if table[placeholder] == nil { table[placeholder] = generated.password }
            } else {
                fixtureUsers[name] = FixtureUser(
                    username: username, password: table[placeholder] ?? Cassette.dummyValue(forPlaceholder: placeholder))
            }
        }
        let transport = ReplayingTransport(cassette: raw, profile: factory.wireProfile, strict: true, substitutions: table)
        guard let urlText = transport.cassette.backendURL else {
            return errored("cassette \(file.lastPathComponent) has no backendURL")
        }
        let url: BackendURL
        do { url = try BackendURL(parsing: urlText) } catch {
            return errored("cassette \(file.lastPathComponent): \(error)")
        }
        if let reason = urlProblem(url, factory: factory) {
            return errored("cassette \(file.lastPathComponent): \(reason)")
        }
        let recordedAt = raw.recordedAt
        let context = BackendContext(transport: transport, clock: { recordedAt })
        var usedBeforeSteps = 0
        var execution = await execute(scenario, variables: raw.variables.merging(["run": run]) { $1 },
                                      fixtureUsers: fixtureUsers,
                                      setupDone: { usedBeforeSteps = transport.usedCount }) {
            try await factory.open(url, context: context)
        }
        let misses = transport.misses
        if !misses.isEmpty, execution.outcome != .skipped {
            execution.outcome = .errored
            execution.reason = "replay: \(misses.count) request(s) matched no recorded interaction: \(misses[0])"
                + (execution.reason.map { " (the step said: \($0))" } ?? "")
        }
        if execution.outcome == .passed || execution.outcome == .lossy {
            do { try transport.verifyAllUsed() } catch {
                execution.outcome = .errored
                execution.reason = "replay: \(MBaaSError.wrap(error).message)"
            }
        }
        // The evidence is what answered the steps (and cleanup): fixture-user sign-up and log-in do not count.
        let stepsUsed = transport.usedCount - usedBeforeSteps
        let fixture: Fixture = stepsUsed == 0 ? .none : raw.provenance.kind == .recorded ? .recorded : .simulated
        return (execution, fixture)
    }

    // MARK: Record

    /// Runs scenarios live through a ``RecordingTransport`` wrapping `transport` and writes one cassette per
    /// scenario that passed to `<directory>/<scenario-id>.json`.
    ///
    /// The provenance is measured, not declared (``RecordingTransport``): a scenario the emulator (`mbaas serve`)
    /// answered is written as ``Provenance/Kind/simulated`` (its results' ``Fixture`` is `simulated`), and a
    /// version the server states in its `Server` header replaces `provenance.serverVersion`, which is kept, marked
    /// ``Provenance/VersionSource/flag``, only when the server states none.
    ///
    /// Recording is never a pass: a scenario whose cassette was written is ``Outcome/recorded`` (replay it to
    /// get a verdict); so is a known loss (``Outcome/lossy``), whose cassette replays as that loss. A skipped
    /// scenario writes nothing. A failed or errored one keeps its outcome and writes
    /// nothing unless `keepFailures` (a cassette that captures a failure then replays as that failure).
    ///
    /// Secrets never reach the file: the `scrubber` replaces the URL's secret (`<BACKEND_SECRET>`), tokens it
    /// learns from responses, and the passwords of the scenario's users (`<SCENARIO_PASSWORD_1>`..., which replay
    /// restores from the scenario and `${run}`).
    ///
    /// The factory's ``BackendFactory/wireProfile`` says which headers and fields are secret and which headers are
    /// volatile or captured: it supplies the scrubber, the request headers and the response headers not given.
    ///
    /// - Parameters:
    ///   - scrubber: by default ``Scrubber/init(profile:secrets:minimumLength:)`` with the factory's profile.
    ///   - requestHeaders: the request headers kept; by default ``HeaderSelection/request(for:)`` of the factory's
    ///     profile (`Authorization` too, scrubbed to placeholders that keep two identities apart, so replay
    ///     compares who is calling).
    ///   - pinnedHeaders: volatile request headers that replay must match exactly anyway (e.g. a signature and
    ///     its timestamp, when the cassette is authored with a fixed key and a pinned clock); they must also be
    ///     kept by `requestHeaders` and not be scrubbed as secrets.
    public static func record(
        adapter: String, factory: any BackendFactory, url: BackendURL, transport: any HTTPTransport,
        clock: (@Sendable () -> Date)?, provenance: Provenance, scrubber: Scrubber? = nil,
        requestHeaders: HeaderSelection? = nil, pinnedHeaders: [String] = [],
        fixtureUsers: [String: FixtureUser] = [:],
        scenarios: [Scenario], to directory: URL, keepFailures: Bool = false
    ) async -> [ScenarioResult] {
        let now: @Sendable () -> Date = clock ?? { Date() }
        var results: [ScenarioResult] = []
        if let reason = urlProblem(url, factory: factory) {
            return scenarios.map { ScenarioResult(adapter: adapter, scenario: $0.id, outcome: .errored, reason: reason) }
        }
        let profile = factory.wireProfile
        let requestHeaders = requestHeaders ?? .request(for: profile)
        let responseHeaders = HeaderSelection.response(for: profile)
        for scenario in scenarios {
            let started = ProcessInfo.processInfo.systemUptime
            let run = makeRunID()
            var scrub = scrubber ?? Scrubber(profile: profile)
            if let secret = url.secret, !secret.isEmpty {
                scrub.secrets.append((placeholder: "<BACKEND_SECRET>", value: secret))
            }
            for (placeholder, value) in scenarioSecrets(scenario, run: run).sorted(by: { $0.key < $1.key }) {
                scrub.secrets.append((placeholder: placeholder, value: value))
            }
            var variables = ["run": run]
            for name in scenario.users {
                let user = fixtureUsers[name] ?? FixtureUser.generated(name, run: run)
                scrub.secrets.append((placeholder: FixtureUser.passwordPlaceholder(name), value: user.password))
                variables[name + "_username"] = user.username
            }
            let recorder = RecordingTransport(wrapping: transport, scrubber: scrub, requestHeaders: requestHeaders,
                                              responseHeaders: responseHeaders)
            let recordedAt = now()
            let context = BackendContext(transport: recorder, clock: now)
            var execution = await execute(scenario, variables: ["run": run], fixtureUsers: fixtureUsers) {
                try await factory.open(url, context: context)
            }
            let writes = execution.outcome == .passed || execution.outcome == .lossy
                || (keepFailures && (execution.outcome == .failed || execution.outcome == .errored))
            if writes {
                var cassette = recorder.cassette(
                    name: scenario.id, adapter: adapter, provenance: provenance, recordedAt: recordedAt,
                    backendURL: urlString(url), variables: variables)
                for i in cassette.interactions.indices {
                    cassette.interactions[i].request.pinnedHeaders = pinnedHeaders.filter {
                        cassette.interactions[i].request.headers[$0] != nil
                    }
                }
                let file = directory.appendingPathComponent(scenario.id + ".json")
                do {
                    try cassette.write(to: file)
                    let note = "cassette written to \(file.path) (\(cassette.interactions.count) interactions)"
                    if execution.outcome == .passed {
                        execution.outcome = .recorded
                        execution.reason = note + "; replay it to verify"
                    } else if execution.outcome == .lossy {
                        execution.outcome = .recorded
                        execution.reason = "lossy: " + (execution.reason ?? "") + "; " + note + "; replay it to verify"
                    } else {
                        execution.reason = (execution.reason ?? "") + "; " + note
                    }
                } catch {
                    execution.outcome = .errored
                    execution.reason = "\(MBaaSError.wrap(error))"
                }
            } else if execution.outcome == .failed || execution.outcome == .errored {
                execution.reason = (execution.reason ?? "") + " (no cassette written)"
            }
            // What answered is measured: the emulator makes it simulated evidence, whatever was declared.
            let answeredBy: Fixture = recorder.servers.contains(where: \.isEmulator) ? .simulated : .live
            results.append(execution.result(adapter: adapter, since: started, fixture: scenario.network ? answeredBy : .none))
        }
        return results
    }

    // MARK: Helpers

    /// The passwords a scenario's steps send, with `${run}` substituted, keyed by the placeholder cassettes
    /// carry instead: `<SCENARIO_PASSWORD_1>`, `<SCENARIO_PASSWORD_2>`... in order of first use; and the
    /// session tokens it makes up (`restoreSession` with a literal token): `<SCENARIO_TOKEN_1>`...
    public static func scenarioSecrets(_ scenario: Scenario, run: String) -> [String: String] {
        var values: [String] = []
        for step in scenario.steps + scenario.cleanup {
            guard let raw = step.arguments["password"]?.stringValue,
                  let value = try? Template.interpolate(raw, ["run": .string(run)]),
                  !values.contains(value)
            else { continue }
            values.append(value)
        }
        var out: [String: String] = [:]
        for (i, v) in values.enumerated() { out["<SCENARIO_PASSWORD_\(i + 1)>"] = v }
        // Tokens a scenario makes up (a bogus session) are sent as credentials, so the scrubber would hide them.
        var tokens: [String] = []
        for step in scenario.steps + scenario.cleanup {
            guard let raw = step.arguments["session"]?["token"]?.stringValue,
                  let value = try? Template.interpolate(raw, ["run": .string(run)]),
                  !tokens.contains(value)
            else { continue }
            tokens.append(value)
        }
        for (i, v) in tokens.enumerated() { out["<SCENARIO_TOKEN_\(i + 1)>"] = v }
        return out
    }

    /// The URL as text, secret included (for the scrubber to replace): `scheme[+http]://user:secret@host:port/path?opts`.
    static func urlString(_ url: BackendURL) -> String {
        let optionText = url.options.keys.sorted().map { "\(percentEncode($0))=\(percentEncode(url.options[$0]!))" }
            .joined(separator: "&")
        let query = optionText.isEmpty ? "" : "?" + optionText
        guard url.host != nil || url.user != nil else { return url.scheme + ":" + url.path + query }
        var s = url.scheme + (url.isSecure ? "" : "+http") + "://"
        if let user = url.user {
            s += percentEncode(user)
            if let secret = url.secret { s += ":" + percentEncode(secret) }
            s += "@"
        }
        s += url.host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? ""
        if let port = url.port { s += ":\(port)" }
        return s + url.path + query
    }

    static func elapsed(since started: TimeInterval) -> Int {
        max(0, Int(((ProcessInfo.processInfo.systemUptime - started) * 1000).rounded()))
    }
}

/// Learns an adapter's capabilities without a network: opens a backend from the URL of any cassette of the
/// adapter (or a placeholder URL) over a transport that refuses every request.
struct CapabilityProbe {
    let factory: any BackendFactory
    let cassettes: URL
    private var cached: Result<Capabilities, MBaaSError>?

    init(factory: any BackendFactory, cassettes: URL) {
        self.factory = factory
        self.cassettes = cassettes
    }

    struct RefusingTransport: HTTPTransport {
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            throw MBaaSError(.transport, "the capability probe sends no requests (\(request.method) \(request.url.path))")
        }
    }

    mutating func capabilities() async -> Result<Capabilities, MBaaSError> {
        if let cached { return cached }
        var url = BackendURL(scheme: factory.schemes.first ?? factory.adapterName, user: "probe", secret: "probe",
                             host: "probe.invalid")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: cassettes.path)) ?? []
        for name in names.sorted() where name.hasSuffix(".json") {
            if let c = try? Cassette.load(from: cassettes.appendingPathComponent(name)), let text = c.backendURL,
               let u = try? BackendURL(parsing: text) {
                url = u
                break
            }
        }
        let result: Result<Capabilities, MBaaSError>
        do {
            let backend = try await factory.open(url, context: BackendContext(transport: RefusingTransport()))
            result = .success(backend.capabilities)
            await backend.close()
        } catch {
            result = .failure(MBaaSError.wrap(error))
        }
        cached = result
        return result
    }
}
