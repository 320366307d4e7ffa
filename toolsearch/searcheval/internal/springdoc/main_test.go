package main

import (
	"encoding/json"
	"testing"
	"testing/fstest"
)

const controller = `package x;

@Tag(name = "管理后台 - CRM 客户")
@RestController
@RequestMapping("/crm/customer")
public class CrmCustomerController {

    @PostMapping("/create")
    @Operation(summary = "创建客户")
    public CommonResult<Long> createCustomer(@Valid @RequestBody CrmCustomerSaveReqVO createReqVO) {
        return success(1L);
    }

    @PutMapping("/update-deal-status")
    @Operation(summary = "更新客户的成交状态", description = "用于成交")
    @Parameters({
            @Parameter(name = "id", description = "客户编号", required = true),
            @Parameter(name = "dealStatus", description = "成交状态", required = true)
    })
    public CommonResult<Boolean> updateCustomerDealStatus(@RequestParam("id") Long id,
                                                          @RequestParam(value = "dealStatus", required = false) Boolean dealStatus) {
        return success(true);
    }

    @GetMapping("/page")
    @Operation(summary = "获得客户分页")
    public CommonResult<PageResult<CrmCustomerRespVO>> getCustomerPage(@Valid CrmCustomerPageReqVO pageVO) {
        return success(null);
    }
}
`

const saveVO = `package x;

@Schema(description = "管理后台 - CRM 客户新增/修改 Request VO")
@Data
public class CrmCustomerSaveReqVO {

    @Schema(description = "编号", requiredMode = Schema.RequiredMode.REQUIRED, example = "13563")
    private Long id;

    @Schema(description = "客户名称", requiredMode = Schema.RequiredMode.REQUIRED,
            example = "赵六")
    @NotEmpty(message = "客户名称不能为空")
    private String name;

    private static final long serialVersionUID = 1L;
}
`

const pageVO = `package x;

public class CrmCustomerPageReqVO extends PageParam {

    @Schema(description = "客户名称", example = "赵六")
    private String name;
}
`

// TestGenerate reads a controller and its VOs as the CRM module writes
// them: mappings, summaries, descriptions, tags, parameters, bodies.
func TestGenerate(t *testing.T) {
	doc, err := generate(fstest.MapFS{
		"c/CrmCustomerController.java":   {Data: []byte(controller)},
		"c/vo/CrmCustomerSaveReqVO.java": {Data: []byte(saveVO)},
		"c/vo/CrmCustomerPageReqVO.java": {Data: []byte(pageVO)},
	}, "T")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(doc)
	var got struct {
		Paths map[string]map[string]struct {
			OperationID string   `json:"operationId"`
			Summary     string   `json:"summary"`
			Description string   `json:"description"`
			Tags        []string `json:"tags"`
			Parameters  []struct {
				Name, In, Description string
				Required              bool
			}
			RequestBody struct {
				Content map[string]struct {
					Schema struct {
						Properties map[string]struct{ Type, Description string }
						Required   []string
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	create := got.Paths["/crm/customer/create"]["post"]
	body := create.RequestBody.Content["application/json"].Schema
	if create.OperationID != "createCustomer" || create.Summary != "创建客户" || len(create.Tags) != 1 ||
		body.Properties["name"].Description != "客户名称" || body.Properties["id"].Type != "integer" || len(body.Required) != 2 {
		t.Errorf("create = %+v", create)
	}
	deal := got.Paths["/crm/customer/update-deal-status"]["put"]
	if deal.Description != "用于成交" || len(deal.Parameters) != 2 || deal.Parameters[0].Description != "客户编号" ||
		!deal.Parameters[0].Required || deal.Parameters[1].Name != "dealStatus" || deal.Parameters[1].Required {
		t.Errorf("update-deal-status = %+v", deal)
	}
	page := got.Paths["/crm/customer/page"]["get"]
	if len(page.Parameters) != 3 || page.Parameters[0].Name != "pageNo" || page.Parameters[2].Name != "name" || page.Parameters[2].In != "query" {
		t.Errorf("page = %+v", page)
	}
}

const swaggerController = `package x;

@Controller
@Api(tags = "PmsBrandController")
@Tag(name = "PmsBrandController", description = "商品品牌管理")
@RequestMapping("/brand")
public class PmsBrandController {
    @ApiOperation(value = "添加品牌")
    @RequestMapping(value = "/create", method = RequestMethod.POST)
    @ResponseBody
    public CommonResult create(@Validated @RequestBody PmsBrandParam pmsBrand) {
        return CommonResult.success(1);
    }

    @ApiOperation("获取全部品牌列表")
    @RequestMapping(value = "/listAll", method = RequestMethod.GET)
    @ResponseBody
    public CommonResult<List<PmsBrand>> getList() {
        return CommonResult.success(null);
    }

    @ApiOperation("根据品牌名称分页获取品牌列表")
    @RequestMapping(value = "/list", method = RequestMethod.GET)
    @ResponseBody
    public CommonResult<CommonPage<PmsBrand>> getList(@RequestParam(value = "keyword", required = false) String keyword,
                                                      @RequestParam(value = "pageNum", defaultValue = "1") Integer pageNum) {
        return CommonResult.success(null);
    }
}
`

const swaggerVO = `package x;

public class PmsBrandParam {
    @NotEmpty
    @ApiModelProperty(value = "品牌名称",required = true)
    private String name;
    @ApiModelProperty("品牌首字母")
    private String firstLetter;
}
`

// TestGenerateSwagger2 reads the Swagger 2 annotations macrozheng/mall
// uses: @ApiOperation, @RequestMapping(method = ...), @ApiModelProperty,
// a @Controller answering @ResponseBody, and a tag's description.
func TestGenerateSwagger2(t *testing.T) {
	doc, err := generate(fstest.MapFS{
		"c/PmsBrandController.java": {Data: []byte(swaggerController)},
		"d/PmsBrandParam.java":      {Data: []byte(swaggerVO)},
	}, "T")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(doc)
	var got struct {
		Tags  []struct{ Name, Description string }
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Summary     string `json:"summary"`
			Parameters  []struct{ Name string }
			RequestBody struct {
				Content map[string]struct {
					Schema struct {
						Properties map[string]struct{ Description string }
						Required   []string
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tags) != 1 || got.Tags[0].Description != "商品品牌管理" {
		t.Errorf("tags = %+v", got.Tags)
	}
	create := got.Paths["/brand/create"]["post"]
	body := create.RequestBody.Content["application/json"].Schema
	if create.Summary != "添加品牌" || body.Properties["firstLetter"].Description != "品牌首字母" || len(body.Required) != 1 {
		t.Errorf("create = %+v", create)
	}
	all, list := got.Paths["/brand/listAll"]["get"], got.Paths["/brand/list"]["get"]
	if all.Summary != "获取全部品牌列表" || all.OperationID != "getList" || list.OperationID != "getList_1" || len(list.Parameters) != 2 {
		t.Errorf("listAll = %+v, list = %+v", all, list)
	}
}
