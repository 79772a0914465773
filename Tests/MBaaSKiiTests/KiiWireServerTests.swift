import Foundation
import MBaaSCore
import Testing

@testable import MBaaSKiiWire

/// The server direction of the wire module: routes parsed back, clauses read into neutral predicates, errors written.
@Suite struct KiiWireServerTests {
    @Test func routesRoundTrip() throws {
        let memo = KiiBucketAddress(bucket: "Memo")
        let mine = KiiBucketAddress(scope: .user("me"), bucket: "Diary")
        let group = KiiBucketAddress(scope: .group("g1"), bucket: "Team-1")
        let routes: [KiiRoute] = [
            .users, .user("me"), .user("LOGIN_NAME:alice"), .groups, .bucket(memo), .objects(memo), .object(memo, id: "o-1"),
            .query(mine), .body(group, id: "x.y"), .acl(.bucket(memo), verb: nil, subject: nil),
            .acl(.object(mine, id: "o1"), verb: .readExistingObject, subject: .anyAuthenticatedUser),
            .acl(.object(memo, id: "o1"), verb: .writeExistingObject, subject: .user("u1")),
        ]
        for route in routes {
            let parsed = try #require(KiiRoute.parse(path: "/api" + route.path(appID: "app1")), "\(route)")
            #expect(parsed.appID == "app1")
            #expect(parsed.route == route)
        }
        #expect(KiiRoute.parse(path: "/api/oauth2/token")?.route == .token)
        #expect(KiiRoute.parse(path: "/api/apps/app1/oauth2/token")?.route == .token)
        #expect(KiiRoute.parse(path: "/api/apps/app1/buckets/Memo/objects/")?.route == .objects(memo))  // trailing slash
        #expect(KiiRoute.parse(path: "/api/apps/app1/buckets/_hidden/objects") == nil)
        #expect(KiiRoute.parse(path: "/other/apps/app1/users") == nil)
        #expect(KiiRoute.hasUnsafeSegment("/api/apps/a/buckets/B/objects/..%2Fx/body"))
        #expect(KiiRoute.hasUnsafeSegment("/api/apps/a/buckets/B/objects/../body"))
        #expect(!KiiRoute.hasUnsafeSegment("/api/apps/a/buckets/B/objects/a..b/body"))
    }

    @Test func clausesReadBackIntoNeutralPredicates() throws {
        // What the client writes, the server reads back to the same meaning.
        let predicate: QueryPredicate = .and([.compare("n", .gte, 2), .compare("n", .lt, 5), .prefix("title", "a"),
                                              .in("tag", ["x", "y"]), .compare("id", .eq, "o1")])
        let clause = try KiiClauseTranslator.clause(for: predicate)
        #expect(try KiiClauseTranslator.predicate(for: clause) == predicate)
        let range = KiiClause.range(field: "_created", lower: KiiRangeBound(.int(1000), included: false),
                                    upper: KiiRangeBound(.int(2000), included: true))
        #expect(try KiiClauseTranslator.predicate(for: range) == .and([
            .compare("createdAt", .gt, .date(Date(timeIntervalSince1970: 1))), .compare("createdAt", .lte, .date(Date(timeIntervalSince1970: 2))),
        ]))
        #expect(try KiiClauseTranslator.predicate(for: .all) == nil)
        #expect(throws: MBaaSError.self) {
            _ = try KiiClauseTranslator.predicate(for: .geoDistance(field: "p", center: KiiGeoPoint(lat: 1, lon: 2), radius: 5, putDistanceInto: nil))
        }
        let request = KiiQueryRequest(clause: .eq(field: "n", value: .int(1)), orderBy: "_modified", descending: true, bestEffortLimit: 0,
                                      paginationKey: "k")
        let query = try KiiClauseTranslator.query(request, className: "C", maxLimit: 200)
        #expect(query.sort == [SortKey("updatedAt", ascending: false)] && query.limit == 200 && query.cursor == "k")
    }

    @Test func errorsAreWrittenAsKiiAnswersThem() throws {
        let stale = KiiErrorBody(MBaaSError(.conflict, "stale")).response()
        #expect(stale.status == 409 && stale.headers["Content-Type"] == "application/vnd.kii.ObjectVersionIsStaleException+json")
        let denied = KiiErrorBody(MBaaSError(.forbidden, "no")).response()
        #expect(denied.status == 401 && denied.headers["Content-Type"] == "application/vnd.kii.UnauthorizedAccessException+json")
        let wrongToken = KiiErrorBody(errorCode: "WRONG_TOKEN", message: "bad").response()
        #expect(wrongToken.status == 403)
        // The client reads back what the server writes.
        let read = KiiErrorCodec.error(for: wrongToken, authenticated: true)
        #expect(read.vendorCode == "WRONG_TOKEN" && read.kind == .unauthorized)
        let grant = KiiErrorBody(errorCode: "invalid_grant", message: "no").response()
        #expect(grant.status == 400 && grant.headers["Content-Type"] == "application/json")
    }
}
