import MBaaSCore
