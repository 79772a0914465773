import Foundation
@testable import MBaaSConformance
import MBaaSCore
import MBaaSExampleAdapter
import Testing

/// The runner itself: outcomes, differences in reasons, captures, sessions, cleanup.
@Suite struct RunnerTests {
    let factory = MemoryBackendFactory()

    func scenario(_ text: String) throws -> Scenario { try Scenario(json: JSON.parse(text)) }

    func run(_ scenarios: Scenario..., host: String = "runner") async throws -> [ScenarioResult] {
        await ConformanceRunner.live(adapter: "memory", factory: factory, url: try BackendURL(parsing: "memory://\(host)"),
                                     scenarios: scenarios)
    }

    @Test func aWrongValueFailsWithTheDifference() async throws {
        let s = try scenario("""
            {"id":"t.wrong","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"create","class":"M_${run}","fields":{"n":1},"capture":{"id":"$.id"}},
              {"op":"get","class":"M_${run}","id":"${id}","expect":{"fields":{"n":2}}}]}
            """)
        let r = try #require(try await run(s).first)
        #expect(r.outcome == .failed)
        #expect(r.reason == "step 2 `get`: field 'n': expected 2, got 1")
        #expect(!r.outcome.isPass)
    }

    @Test func anExpectedDoubleMatchesTheSameNumberAndDatesMatchToTheMillisecond() async throws {
        let s = try scenario("""
            {"id":"t.loose","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"create","class":"M_${run}","fields":{"n":2,"d":{"__type":"Date","iso":"2024-01-01T00:00:00.000Z"}},
               "expect":{"fields":{"n":2.0,"d":{"__type":"Date","iso":"2024-01-01T00:00:00Z"}}}}]}
            """)
        #expect(try await run(s).first?.outcome == .passed)
    }

    @Test func anExpectedIntNeverMatchesADoubleAndBigIntsCompareExactly() async throws {
        let double = try scenario("""
            {"id":"t.intdouble","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"create","class":"M_${run}","fields":{"n":50.0},"expect":{"fields":{"n":50}}}]}
            """)
        let r = try #require(try await run(double).first)
        #expect(r.outcome == .failed)
        #expect(r.reason?.contains("expected 50, got 50.0") == true, "\(r.reason ?? "")")
        let big = try scenario("""
            {"id":"t.big","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"create","class":"M_${run}","fields":{"n":9007199254740992},"expect":{"match":{"$.fields.n":9007199254740993}}}]}
            """)
        #expect(try await run(big).first?.outcome == .failed)
    }

    @Test func exactFieldsRefusesAnyExtraField() async throws {
        let s = try scenario("""
            {"id":"t.exact","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"create","class":"M_${run}","fields":{"a":1,"leak":"x"},"expect":{"exactFields":{"a":1}}}]}
            """)
        let r = try #require(try await run(s).first)
        #expect(r.outcome == .failed)
        #expect(r.reason?.contains("unexpected field(s) leak") == true, "\(r.reason ?? "")")
        let ok = try scenario("""
            {"id":"t.exact2","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"create","class":"M_${run}","fields":{"a":1},"expect":{"exactFields":{"a":1}}}]}
            """)
        #expect(try await run(ok).first?.outcome == .passed)
    }

    @Test func malformedIdAndTextExpectationsAreMismatchesNotVacuousPasses() async throws {
        for expect in [#"{"ids":"abc"}"#, #"{"idSet":{"a":1}}"#, #"{"ids":[1]}"#] {
            let s = try scenario("""
                {"id":"t.bad","title":"","group":"t","requires":["objects"],"steps":[
                  {"op":"query","class":"Never_${run}","expect":\(expect)}]}
                """)
            let r = try #require(try await run(s).first)
            #expect(r.outcome == .failed, "\(expect)")
        }
        for expect in [#"{"text":null}"#, #"{"base64":5}"#] {
            let s = try scenario("""
                {"id":"t.bad2","title":"","group":"t","requires":["files"],"steps":[
                  {"op":"upload","name":"a${run}.txt","text":"hi","expect":\(expect)}]}
                """)
            let r = try #require(try await run(s).first)
            #expect(r.outcome == .failed, "\(expect)")
            #expect(r.reason?.contains("must be a string") == true, "\(r.reason ?? "")")
        }
    }

    @Test func wrongErrorKindAndUnexpectedSuccessFail() async throws {
        let wrongKind = try scenario("""
            {"id":"t.kind","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"get","class":"M_${run}","id":"nope","expectError":"invalidRequest"}]}
            """)
        let noError = try scenario("""
            {"id":"t.noerror","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"create","class":"M_${run}","fields":{},"expectError":["notFound","forbidden"]}]}
            """)
        let results = try await run(wrongKind, noError)
        #expect(results[0].outcome == .failed)
        #expect(results[0].reason?.hasPrefix("step 1 `get`: expected error invalidRequest, got notFound: no M_") == true)
        #expect(results[1].outcome == .failed)
        #expect(results[1].reason?.contains("expected error notFound or forbidden, but it succeeded with {\"class\":") == true)
    }

    @Test func anUnexpectedErrorIsErrored() async throws {
        let s = try scenario("""
            {"id":"t.throws","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"get","class":"M_${run}","id":"nope"}]}
            """)
        let r = try #require(try await run(s).first)
        #expect(r.outcome == .errored)
        #expect(r.reason?.contains("unexpected error notFound") == true)
    }

    @Test func aMissingCapabilityIsSkippedNeverPassed() async throws {
        let s = try scenario("""
            {"id":"batch.x","title":"","group":"batch","requires":["objects","batch","operator.regex"],"steps":[
              {"op":"batch","operations":[]}]}
            """)
        let results = try await run(s)
        let r = try #require(results.first)
        #expect(r.outcome == .skipped)
        #expect(r.reason == "missing capability 'batch': the example has no batch endpoint; missing capability 'operator.regex': the example evaluates only operators it implements itself")
        let report = ConformanceReport(results: results)
        #expect(report.summary["memory"]?.passed == 0)
        #expect(report.summary["memory"]?.skipped == 1)
        #expect(ConformanceReport.cell(report.counts(adapter: "memory")) == "0/1 ✓ 1 skip")
        // A baseline that had it passing sees a regression.
        let baseline = ConformanceReport(results: [ScenarioResult(adapter: "memory", scenario: "batch.x", outcome: .passed)])
        #expect(BaselineComparison(baseline: baseline, current: report).regressions.count == 1)
    }

    @Test func capturesInterpolateAndKeepTheirType() async throws {
        let s = try scenario("""
            {"id":"t.capture","title":"","group":"t","requires":["objects","value.object"],"steps":[
              {"op":"create","class":"M_${run}","fields":{"obj":{"k":[1,2]},"name":"n-${run}"},
               "capture":{"id":"$.id","obj":"$.fields.obj","name":"$.fields.name"}},
              {"op":"create","class":"M_${run}","fields":{"copy":"${obj}","label":"of ${id} (${name})"},
               "expect":{"fields":{"copy":{"k":[1,2]},"label":"of ${id} (${name})"}},"capture":{"label":"$.fields.label"}}]}
            """)
        var pool = BackendPool { try await factory.open(BackendURL(parsing: "memory://capture"), context: BackendContext()) }
        _ = try await pool.backend("main")
        var interpreter = StepInterpreter(pool: pool, variables: ["run": "abcd1234"])
        for (i, step) in s.steps.enumerated() { try await interpreter.run(step, label: "step \(i + 1)") }
        let label = try #require(interpreter.variables["label"]?.stringValue)
        #expect(label.hasPrefix("of r0") && label.hasSuffix(" (n-abcd1234)"))
    }

    @Test func anUndefinedVariableIsErrored() async throws {
        let s = Scenario(id: "t.undef", title: "", group: "t", requires: ["objects"],
                         steps: [Step(.get, arguments: ["class": "M", "id": "${never}"])])
        let r = try #require(try await run(s).first)
        #expect(r.outcome == .errored)
        #expect(r.reason == "step 1 `get`: undefined variable ${never}")
    }

    @Test func cleanupRunsAfterAFailureAndSkipsUncapturedVariables() async throws {
        let s = try scenario("""
            {"id":"t.cleanup","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"create","class":"Clean","fields":{"n":1},"capture":{"id":"$.id"}},
              {"op":"get","class":"Clean","id":"${id}","expect":{"fields":{"n":99}}},
              {"op":"create","class":"Clean","fields":{"n":2},"capture":{"never":"$.id"}}],
             "cleanup":[{"op":"delete","class":"Clean","id":"${id}"},{"op":"delete","class":"Clean","id":"${never}"}]}
            """)
        let r = try #require(try await run(s, host: "cleanup").first)
        #expect(r.outcome == .failed)
        let probe = try await factory.open(BackendURL(parsing: "memory://cleanup"), context: BackendContext())
        #expect(try await probe.count(Query("Clean")) == 0)
    }

    @Test func aCleanupErrorOtherThanNotFoundMakesAPassErrored() async throws {
        let s = try scenario("""
            {"id":"t.cleanupfail","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"create","class":"Clean2","fields":{"n":1},"capture":{"id":"$.id"}},
              {"op":"delete","class":"Clean2","id":"${id}"}],
             "cleanup":[{"op":"delete","class":"Clean2","id":"${id}"},{"op":"delete","class":"bad name!","id":"${id}"}]}
            """)
        let r = try #require(try await run(s, host: "cleanupfail").first)
        #expect(r.outcome == .errored)
        #expect(r.reason?.hasPrefix("cleanup failed: cleanup 2 `delete`") == true, "\(r.reason ?? "")")
    }

    @Test func fixtureUsersAreSignedUpWhenNotGivenAndLoggedInWhenGiven() async throws {
        let s = try scenario("""
            {"id":"t.fixture","title":"","group":"t","requires":["auth"],"users":["alice","bob"],"steps":[
              {"op":"logIn","username":"${alice_username}","password":"${alice_password}",
               "expect":{"match":{"$.userId":"${alice_id}"}}},
              {"op":"logIn","as":"b","username":"${bob_username}","password":"${bob_password}",
               "expect":{"match":{"$.userId":"${bob_id}"}}},
              {"op":"currentUser","expect":{"match":{"$.username":"${alice_username}"}}}]}
            """)
        #expect(s.users == ["alice", "bob"])
        let r = try #require(try await run(s, host: "fixtures").first)
        #expect(r.outcome == .passed, "\(r.reason ?? "")")
        // A given user is logged in, not signed up: one that does not exist cannot be provided.
        let given = await ConformanceRunner.live(
            adapter: "memory", factory: factory, url: try BackendURL(parsing: "memory://fixtures2"),
            fixtureUsers: ["alice": FixtureUser(username: "nobody", password: "pw")], scenarios: [s])
        #expect(given.first?.outcome == .errored)
        #expect(given.first?.reason?.contains("cannot provide fixture user 'alice' (log in nobody)") == true,
                "\(given.first?.reason ?? "")")
        #expect(throws: MBaaSError.self) {
            try scenario(#"{"id":"t.x","title":"","group":"t","users":["al_ice"],"steps":[{"op":"session"}]}"#)
        }
    }

    @Test func parallelStepsRunTogetherAndEachIsChecked() async throws {
        let s = try scenario("""
            {"id":"t.parallel","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"parallel","steps":[
                {"op":"create","class":"Par_${run}","fields":{"n":1}},
                {"op":"create","as":"other","class":"Par_${run}","fields":{"n":2}},
                {"op":"get","class":"Par_${run}","id":"missing","expectError":"notFound"}]},
              {"op":"query","class":"Par_${run}","expect":{"count":2}}]}
            """)
        let r = try #require(try await run(s, host: "parallel").first)
        #expect(r.outcome == .passed, "\(r.reason ?? "")")
        let failing = try scenario("""
            {"id":"t.parallel2","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"parallel","steps":[
                {"op":"create","class":"Par_${run}","fields":{"n":1},"expect":{"fields":{"n":1}}},
                {"op":"create","class":"Par_${run}","fields":{"n":2},"expect":{"fields":{"n":3}}}]}]}
            """)
        let f = try #require(try await run(failing, host: "parallel2").first)
        #expect(f.outcome == .failed)
        #expect(f.reason?.hasPrefix("step 1 `parallel`[1]: field 'n': expected 3, got 2") == true, "\(f.reason ?? "")")
        let capturing = try scenario("""
            {"id":"t.parallel3","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"parallel","steps":[{"op":"create","class":"Par_${run}","fields":{"n":1},"capture":{"x":"$.id"}}]}]}
            """)
        #expect(try await run(capturing, host: "parallel3").first?.outcome == .errored)
    }

    @Test func namedSessionsAreSeparateInstances() async throws {
        let s = try scenario("""
            {"id":"t.sessions","title":"","group":"t","requires":["signUp","auth"],"steps":[
              {"op":"signUp","username":"a${run}","password":"pw","capture":{"uid":"$.userId"}},
              {"op":"session","as":"bob","expect":{"match":{"$":null}}},
              {"op":"currentUser","as":"bob","expectError":"unauthorized"},
              {"op":"currentUser","expect":{"match":{"$.id":"${uid}","$.username":"a${run}"}}}]}
            """)
        #expect(s.sessionNames == ["main", "bob"])
        let r = try #require(try await run(s).first)
        #expect(r.outcome == .passed, "\(r.reason ?? "")")
    }

    @Test func queryAllCountsPages() async throws {
        let s = try scenario("""
            {"id":"t.pages","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"create","class":"P_${run}","fields":{"n":1}},
              {"op":"create","class":"P_${run}","fields":{"n":2}},
              {"op":"create","class":"P_${run}","fields":{"n":3}},
              {"op":"queryAll","class":"P_${run}","order":"-n","pageSize":1,"expect":{"count":3,"minPages":4}}]}
            """)
        let r = try #require(try await run(s).first)
        #expect(r.outcome == .failed)
        #expect(r.reason == "step 4 `queryAll`: pages: expected at least 4, got 3")
    }

    @Test func runIDsAreEightLowercaseAlphanumerics() {
        var seen: Set<String> = []
        for _ in 0..<200 {
            let id = ConformanceRunner.makeRunID()
            #expect(id.count == 8)
            #expect(id.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) })
            #expect(id.first!.isLetter)
            seen.insert(id)
        }
        #expect(seen.count > 190)
    }

    @Test func aBackendThatWillNotOpenIsErrored() async throws {
        struct Broken: BackendFactory {
            let schemes = ["broken"]
            let adapterName = "broken"
            func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
                throw MBaaSError(.unauthorized, "bad key")
            }
        }
        let s = Scenario(id: "t.open", title: "", group: "t", steps: [Step(.session)])
        let results = await ConformanceRunner.live(adapter: "broken", factory: Broken(),
                                                   url: BackendURL(scheme: "broken", host: "x"), scenarios: [s])
        #expect(results.first?.outcome == .errored)
        #expect(results.first?.reason == "cannot open the backend: unauthorized: bad key")
    }
}

@Suite struct TemplateAndPathTests {
    @Test func substitution() throws {
        let vars: [String: JSON] = ["run": "abc", "n": 5, "obj": .object(["a": 1])]
        #expect(try Template.substitute(string: "${n}", vars) == .int(5))
        #expect(try Template.substitute(string: "${obj}", vars) == .object(["a": 1]))
        #expect(try Template.substitute(string: "M_${run}_${n}", vars) == "M_abc_5")
        #expect(try Template.substitute(.object(["${run}": ["x${run}"]]), vars) == .object(["abc": ["xabc"]]))
        #expect(throws: Template.UndefinedVariable.self) { try Template.substitute(string: "a${zzz}", vars) }
        #expect(Template.references(in: .object(["k${a}": ["${b}", "${c}x"]])) == ["a", "b", "c"])
    }

    @Test func paths() throws {
        let doc = try JSON.parse(#"{"records":[{"id":"a","fields":{"t":"x"}},{"id":"b"}],"n":null}"#)
        #expect(try JSONPath.resolve("$", in: doc) == doc)
        #expect(try JSONPath.resolve("$.records[1].id", in: doc) == "b")
        #expect(try JSONPath.resolve("$.records[0].fields.t", in: doc) == "x")
        #expect(try JSONPath.resolve("$.records[0]['fields'].t", in: doc) == "x")
        #expect(try JSONPath.resolve("$.records[5].id", in: doc) == nil)
        #expect(try JSONPath.resolve("$.n", in: doc) == .null)
        #expect(throws: JSONPath.Invalid.self) { try JSONPath.resolve("records", in: doc) }
        #expect(throws: JSONPath.Invalid.self) { try JSONPath.resolve("$.a[x]", in: doc) }
    }
}
