import Foundation
@testable import MBaaSConformance
import MBaaSCore
import Testing

/// The bundled scenarios: loadable, valid, and covering what the issue lists.
@Suite struct CatalogTests {
    let suite: ConformanceSuite

    init() throws { suite = try ConformanceSuite.bundled() }

    @Test func bundledScenariosLoadAndValidate() throws {
        #expect(suite.scenarios.count >= 90)
        #expect(Set(suite.scenarios.map(\.id)).count == suite.scenarios.count)
        #expect(suite.groups == ["objects", "values", "queries", "files", "auth", "batch", "errors", "acl", "probes"])
        try ScenarioCatalog.validate(suite.scenarios)
        // The version is stable for the same scenarios and changes with them.
        #expect(suite.version == (try ConformanceSuite.bundled()).version)
        #expect(suite.version.hasPrefix("1+"))
        #expect(suite.version.count == 10)
        #expect(ConformanceSuite(scenarios: Array(suite.scenarios.dropLast())).version != suite.version)
    }

    @Test func everyQueryOperatorHasAScenarioRequiringIt() {
        let required = Set(suite.scenarios.flatMap(\.requires))
        for op in QueryOperator.allCases {
            #expect(required.contains(.operator(op)), "no scenario requires operator.\(op.rawValue)")
        }
    }

    @Test func everyValueTypeRoundTrips() {
        for type in ["string", "int", "double", "bool", "date", "bytes", "array", "object", "pointer", "geoPoint", "null", "file"] {
            #expect(suite.scenario("values.\(type)") != nil, "values.\(type)")
        }
        for name in ["Date", "Bytes", "array", "object", "Pointer", "GeoPoint", "null", "File"] {
            #expect(suite.scenarios.contains { $0.requires.contains(.valueType(name)) }, "value.\(name)")
        }
        // Universal types require nothing beyond objects: data scenarios act as an app user where the backend has
        // users (actAs) and run anonymously where it has none, so they do not require auth.
        #expect(suite.scenario("values.string")?.requires == [.objects])
        #expect(suite.scenario("values.string")?.lossyUnder == [.emptyStringsAbsent])
        #expect(suite.scenario("values.string")?.actAs == "alice")
    }

    @Test func theIssueListIsCovered() {
        for id in ["objects.crud.basic", "objects.version.conflict", "queries.sort.multiKey", "queries.paging",
                   "queries.count", "queries.keys", "files.roundtrip", "files.missing", "files.attachment",
                   "auth.signUp.logIn", "auth.logIn.wrongPassword", "auth.currentUser.noSession", "auth.acl.private",
                   "batch.create", "errors.notFound.record", "errors.invalidClassName", "values.unicode",
                   "files.unicodeName"] {
            #expect(suite.scenario(id) != nil, "\(id)")
        }
        #expect(suite.scenario("files.attachment")?.requires.contains(.fileAttachment) == true)
        #expect(suite.scenario("auth.acl.private")?.sessionNames == ["main", "bob"])
    }

    @Test func cleanupOnlyDeletes() {
        for s in suite.scenarios {
            for step in s.cleanup { #expect([.delete, .deleteFile].contains(step.operation), "\(s.id)") }
        }
    }

    @Test func scenarioJSONRoundTrips() throws {
        for s in suite.scenarios { #expect(try Scenario(json: s.json) == s) }
    }

    @Test func validationCatchesUndeclaredCapabilitiesAndBadCleanup() throws {
        let s = try Scenario(json: JSON.parse("""
            {"id":"t.x","title":"","group":"t","requires":["objects"],"steps":[
              {"op":"count","class":"Bad-Name","where":{"n":{"$regex":"^a"}},"order":"a,b"},
              {"op":"get","class":"M","id":"${later}"},
              {"op":"create","class":"M","fields":{"d":{"__type":"Date","iso":"2024-01-01T00:00:00Z"}},"capture":{"later":"$.id"}}],
             "cleanup":[{"op":"create","class":"M","fields":{}}]}
            """))
        #expect(ScenarioCatalog.derivedRequirements(of: s) ==
                [.objects, .count, .operator(.regex), .multiKeySort, .valueType("Date")])
        do {
            try ScenarioCatalog.validate([s, s])
            Issue.record("validation passed")
        } catch let e as MBaaSError {
            #expect(e.message.contains("t.x: duplicate id"))
            #expect(e.message.contains("steps need capabilities not in 'requires': count, multiKeySort, operator.regex, value.Date"))
            #expect(e.message.contains("class name 'Bad-Name' is not [A-Za-z][A-Za-z0-9_]*"))
            #expect(e.message.contains("steps[1] uses ${later} before it is captured"))
            #expect(e.message.contains("cleanup[0]: only 'delete'"))
        }
    }

    @Test func malformedScenariosAreRejectedWithTheirPlace() {
        func message(_ text: String) -> String? {
            do { _ = try Scenario(json: JSON.parse(text)); return nil } catch let e as MBaaSError { return e.message } catch { return "\(error)" }
        }
        #expect(message(#"{"id":"a.b","title":"","group":"a","steps":[{"op":"fly"}]}"#)?
            .hasPrefix("scenario 'a.b': steps[0]: unknown op 'fly'") == true)
        #expect(message(#"{"id":"a.b","title":"","group":"a","steps":[{"op":"get","expectError":"nope"}]}"#)?
            .contains("'expectError' must name error kinds") == true)
        #expect(message(#"{"id":"a.b","title":"","group":"a","steps":[{"op":"get","expect":{"feilds":{}}}]}"#)?
            .contains("unknown expectation 'feilds'") == true)
        #expect(message(#"{"id":"a.b","title":"","group":"a","steps":[]}"#) == "scenario 'a.b': has no steps")
    }

    @Test func selectionByIdOrPrefix() {
        #expect(suite.selecting(["queries"]).scenarios.allSatisfy { $0.group == "queries" })
        #expect(suite.selecting(["queries.eq"]).scenarios.map(\.id) == ["queries.eq"])
        #expect(suite.selecting(["queries.e*"]).scenarios.map(\.id).sorted() == ["queries.emptyClass", "queries.eq", "queries.exists", "queries.exists.null"])
        #expect(suite.selecting(["queries.e"]).scenarios.isEmpty)
        #expect(suite.selecting([]).scenarios.count == suite.scenarios.count)
    }
}
