// Nothing happens at launch: the first page signs in when it needs to.
App({})
