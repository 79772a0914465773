import Foundation
@testable import MBaaSConformance
import MBaaSCore
import MBaaSExampleAdapter
import Testing

/// Issue 33, points 5 and 13: a declared loss is reported as `lossy` (not skipped, not passed), a backend without
/// users runs the data scenarios anonymously, and fixture users are taken by every live entry point.
@Suite struct LossyAndAnonymousRunTests {
    static let emptyString = "the reduced example stores an empty string as no value"

    /// A backend that loses empty strings and declares it: `values.string` is lossy with the difference, and
    /// `values.string.emptyReadsAbsent` (which requires the limit) passes. The same backend without the
    /// declaration fails `values.string` (an undeclared loss is a failure) and skips the other.
    @Test func aDeclaredLossIsLossyWithTheDifferenceAndAnUndeclaredOneFails() async throws {
        let suite = try ConformanceSuite.bundled().selecting(["values.string"])
        #expect(suite.scenarios.map(\.id) == ["values.string", "values.string.emptyReadsAbsent"])
        let declaring = ReducedFactory(adding: [.emptyStringsAbsent], dropsEmptyStrings: true)
        let report = await suite.run(adapter: "memory", factory: declaring, url: try BackendURL(parsing: "memory://lossy"))
        let lossy = try #require(report.result(adapter: "memory", scenario: "values.string"))
        #expect(lossy.outcome == .lossy)
        #expect(lossy.reason == "known loss under declared 'emptyStringsAbsent': step 1 `create`: field 'empty': expected \"\", but the field is missing (fields: quoted, v)")
        #expect(lossy.fixture == .live)
        #expect(!lossy.outcome.isPass)
        #expect(report.result(adapter: "memory", scenario: "values.string.emptyReadsAbsent")?.outcome == .passed)
        let counts = try #require(report.summary["memory"])
        #expect(counts.passed == 1 && counts.lossy == 1 && counts.failed == 0 && counts.skipped == 0 && counts.total == 2)
        #expect(report.hasLosses && !report.hasProblems)

        let silent = ReducedFactory(dropsEmptyStrings: true)
        let undeclared = await suite.run(adapter: "memory", factory: silent, url: try BackendURL(parsing: "memory://silent"))
        #expect(undeclared.result(adapter: "memory", scenario: "values.string")?.outcome == .failed)
        #expect(undeclared.result(adapter: "memory", scenario: "values.string")?.reason
                == "step 1 `create`: field 'empty': expected \"\", but the field is missing (fields: quoted, v)")
        #expect(undeclared.result(adapter: "memory", scenario: "values.string.emptyReadsAbsent")?.outcome == .skipped)
        #expect(!undeclared.hasLosses && undeclared.hasProblems)

        // And where nothing is lost, declared or not, the scenario passes: lossy is never a default.
        let faithful = await suite.run(adapter: "memory", factory: ReducedFactory(adding: [.emptyStringsAbsent]),
                                       url: try BackendURL(parsing: "memory://faithful"))
        #expect(faithful.result(adapter: "memory", scenario: "values.string")?.outcome == .passed)
    }

    /// Point 13 (i): a store without users (no `auth`) used to skip all 119 scenarios (every one required
    /// `auth`); now every data scenario runs anonymously, and only those that need a user (the auth and ACL
    /// groups, two probes) are skipped, naming `auth`. The same store with users runs the user-acting variants:
    /// it passes the same data scenarios plus those needing users.
    @Test func aBackendWithoutUsersRunsTheDataScenariosAnonymously() async throws {
        let suite = try ConformanceSuite.bundled()
        let userless = ReducedFactory(removing: [.auth, .signUp, .serverLogout])
        let report = await suite.run(adapter: "memory", factory: userless, url: try BackendURL(parsing: "memory://userless"))
        for r in report.results where r.outcome != .skipped {
            #expect(r.outcome == .passed, "\(r.scenario): \(r.reason ?? "")")
        }
        let c = try #require(report.summary["memory"])
        #expect(c.total == suite.scenarios.count)
        #expect(c.passed == 72, "passed \(c.passed)")
        #expect(c.skipped == suite.scenarios.count - 72)
        #expect(c.errored == 0 && c.failed == 0 && c.lossy == 0)
        #expect(report.result(adapter: "memory", scenario: "objects.crud.basic")?.outcome == .passed)
        #expect(report.result(adapter: "memory", scenario: "queries.ne.missingKey")?.outcome == .passed)
        #expect(report.result(adapter: "memory", scenario: "auth.fixture.logIn")?.reason
                == "missing capability 'auth': the reduced example has no auth")
        #expect(report.result(adapter: "memory", scenario: "acl.private.crossUser")?.outcome == .skipped)
        #expect(report.mostlySkippedAdapters == [])

        // With users: the same data scenarios pass acting as alice, and the 13 auth scenarios run too; only the
        // sign-up probe (which runs where sign-up is missing) is the other way round.
        let withUsers = await suite.run(adapter: "memory", factory: MemoryBackendFactory(),
                                        url: try BackendURL(parsing: "memory://users"))
        let passedWith = Set(withUsers.results.filter { $0.outcome == .passed }.map(\.scenario))
        let passedWithout = Set(report.results.filter { $0.outcome == .passed }.map(\.scenario))
        #expect(passedWith.count == 84)
        #expect(passedWithout.subtracting(passedWith) == ["probes.signUp"])
        let needUsers = passedWith.subtracting(passedWithout)
        #expect(needUsers.count == 13 && needUsers.allSatisfy { $0.hasPrefix("auth.") }, "\(needUsers.sorted())")
    }

    /// Point 13 (ii): a store whose users are provisioned (no sign-up) runs through `liveOnFreshDatabases` with
    /// the fixture users given; without them, every scenario needing a user errors naming the user to give.
    @Test func liveOnFreshDatabasesTakesFixtureUsers() async throws {
        let suite = try ConformanceSuite.bundled()
        let directory = ["alice": "alice-pw-1", "bob": "bob-pw-1"]
        let factory = ReducedFactory(removing: [.signUp], provisioned: directory)
        let users = directory.mapValues { $0 }.reduce(into: [String: FixtureUser]()) {
            $0[$1.key] = FixtureUser(username: $1.key, password: $1.value)
        }
        // Each scenario's fresh "database" is a server of its own, named after the file.
        let fresh: @Sendable (URL) -> BackendURL = { file in
            BackendURL(scheme: "memory", host: file.deletingLastPathComponent().lastPathComponent + "." + file.deletingPathExtension().lastPathComponent)
        }
        let given = await ConformanceRunner.liveOnFreshDatabases(
            adapter: "memory", factory: factory, scenarios: suite.scenarios, fixtureUsers: users, url: fresh)
        for r in given where r.outcome != .skipped {
            #expect(r.outcome == .passed, "\(r.scenario): \(r.reason ?? "")")
        }
        // 79 pass: the 84 of the full example but the 6 that sign up, plus the sign-up probe; 78 of them need alice.
        #expect(given.filter { $0.outcome == .passed }.count == 79)
        let withUsers = Set(suite.scenarios.filter { !$0.users.isEmpty }.map(\.id))
        #expect(given.filter { withUsers.contains($0.scenario) && $0.outcome == .passed }.count == 78)

        let none = await ConformanceRunner.liveOnFreshDatabases(
            adapter: "memory", factory: ReducedFactory(removing: [.signUp], provisioned: directory),
            scenarios: suite.scenarios, url: fresh)
        let errored = none.filter { $0.outcome == .errored }
        #expect(errored.count == 78)
        #expect(none.filter { $0.outcome == .passed }.map(\.scenario) == ["auth.currentUser.noSession"])
        #expect(errored.allSatisfy { $0.reason?.hasPrefix("fixture user 'alice' is needed") == true })
    }
}
