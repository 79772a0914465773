print("mbaas")
