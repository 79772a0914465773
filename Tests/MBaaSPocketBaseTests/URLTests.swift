import Testing
import MBaaSCore
@testable import MBaaSPocketBase
